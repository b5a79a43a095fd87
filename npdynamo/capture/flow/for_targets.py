"""The target of a ``for`` statement that ``for_loops`` forms into one node: the local the loop
variable is stored into, or the locals a tuple target unpacks it into
(``for i, row in enumerate(a)``, ``row_loops``)."""

from __future__ import annotations

from npdynamo.capture import bytecode as bc

#: a ``for`` statement's target: a local's name, or the names a tuple target unpacks into
Target = str | tuple[str, ...]


def store_target(instrs: list, body: int, unpack: bool) -> Target | None:
    """The target the instructions from ``body`` store the item into: one local, or (with
    ``unpack``) ``UNPACK_SEQUENCE n`` into ``n`` distinct locals; None for anything else."""
    store = instrs[body] if body < len(instrs) else None
    if not isinstance(store, bc.Instr):
        return None
    if store.name == "STORE_FAST":
        return store.arg
    if not unpack or store.name != "UNPACK_SEQUENCE":
        return None
    names: list[str] = []
    for ins in instrs[body + 1:]:
        if len(names) >= store.arg or not isinstance(ins, bc.Instr):
            break
        if ins.name == "STORE_FAST":
            names.append(ins.arg)
        elif ins.name == "STORE_FAST_STORE_FAST":
            names += list(ins.arg)
        else:
            break
    if len(names) != store.arg or len(set(names)) != len(names):
        return None
    return tuple(names)


def targets(var: Target) -> tuple[str, ...]:
    """The locals a loop's target stores."""
    return var if isinstance(var, tuple) else (var,)


def var_text(var: Target) -> str:
    """The loop variable as the source writes it."""
    return ", ".join(targets(var))

__all__ = ["Target", "store_target", "targets", "var_text"]
