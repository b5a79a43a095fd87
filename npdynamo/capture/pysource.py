"""Generated Python functions: the guard checks and entry runners are source text compiled once.

Generated functions beat interpreted closures by about 2.7x (capture-pitfalls.md, Q4), so every
per-call path of a compiled entry is generated source. ``Namespace`` binds the objects that source
refers to (dtypes, types, constants, closure cells) under stable names; ``npdynamo.generated``
compiles and runs it.
"""

from __future__ import annotations

from collections.abc import Callable

from npdynamo import generated


class Namespace(generated.Namespace):
    """Names for the objects a generated function refers to (``K0``, ``K1``, ...); becomes its
    globals."""

    def __init__(self, base: dict | None = None) -> None:
        super().__init__(base, numbered=True)


def literal(value: object) -> str | None:
    """Source text for ``value`` when its repr is a faithful literal, else None."""
    if type(value) is int and value.bit_length() > 4_000:
        return None  # its repr may pass sys.get_int_max_str_digits() (a ValueError)
    if value is None or value is Ellipsis or type(value) in (bool, int, str):
        return repr(value)
    if type(value) is float:
        return repr(value) if value == value and abs(value) != float("inf") else None
    if type(value) is tuple:
        parts = [literal(v) for v in value]
        if any(p is None for p in parts):
            return None
        return "(" + "".join(p + ", " for p in parts) + ")"
    return None


def make_function(source: str, fn_name: str, namespace: Namespace, label: str) -> Callable:
    """Compile ``source`` (defining ``fn_name``) once; its lines are in linecache while it lives."""
    return generated.define(source, fn_name, namespace, label=label)
