"""One operation of the fx graph IR: its inputs, its users and what the passes know about it.

The capture stage creates ``Node``s through ``Graph``; passes edit them in place. Every edit of
``args``/``kwargs`` goes through one method that keeps the def-use links (``users``) right, so
passes can trust them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from npdynamo.fx.graph import Graph

#: The kinds of node the IR has.
NODE_OPS = ("placeholder", "call_function", "output")


def map_arg(a: Any, fn: Callable[[Node], Any]) -> Any:
    """Apply ``fn`` to every ``Node`` inside ``a``, rebuilding tuples, lists, dicts and slices."""
    if isinstance(a, Node):
        return fn(a)
    if type(a) is tuple:
        return tuple(map_arg(x, fn) for x in a)
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return type(a)(*(map_arg(x, fn) for x in a))
    if isinstance(a, tuple):
        return type(a)(map_arg(x, fn) for x in a)
    if isinstance(a, list):
        return [map_arg(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_arg(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_arg(a.start, fn), map_arg(a.stop, fn), map_arg(a.step, fn))
    return a


def iter_nodes(a: Any) -> Iterator[Node]:
    """Every ``Node`` inside a nested argument, in order of appearance (repeats included)."""
    if isinstance(a, Node):
        yield a
    elif isinstance(a, (tuple, list)):
        for x in a:
            yield from iter_nodes(x)
    elif isinstance(a, dict):
        for x in a.values():
            yield from iter_nodes(x)
    elif isinstance(a, slice):
        yield from iter_nodes(a.start)
        yield from iter_nodes(a.stop)
        yield from iter_nodes(a.step)


def target_name(target: Any) -> str:
    """A short human name for a node target: an op's ``name``, else the callable's name."""
    for attr in ("name", "__name__"):
        value = getattr(target, attr, None)
        if isinstance(value, str) and value:
            return value
    if isinstance(target, str):
        return target
    return type(target).__name__


class Node:
    """A value of the graph: a function input, a function call, or the graph's result.

    ``op`` is ``"placeholder"``, ``"call_function"`` or ``"output"``. ``args``/``kwargs`` may hold
    other nodes anywhere inside nested tuples, lists, dicts and slices. Nodes hash and compare
    by identity; ``repr`` is the name so that printed arguments read like code.
    """

    def __init__(
        self,
        graph: Graph,
        name: str,
        op: str,
        target: Any,
        args: tuple = (),
        kwargs: dict | None = None,
    ) -> None:
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.users: dict[Node, None] = {}
        self.meta: dict[str, Any] = {}
        self._args: tuple = ()
        self._kwargs: dict[str, Any] = {}
        self._inputs: dict[Node, None] = {}
        # Neighbours in the graph's doubly linked node list; the graph's sentinel closes the ring.
        self._prev: Node = self
        self._next: Node = self
        self._erased = False
        self._set_args_kwargs(tuple(args), dict(kwargs or {}))

    # -- arguments and def-use links ---------------------------------------------------------

    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, value: tuple) -> None:
        self._set_args_kwargs(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> dict[str, Any]:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict[str, Any]) -> None:
        self._set_args_kwargs(self._args, dict(value))

    @property
    def all_input_nodes(self) -> list[Node]:
        """The distinct nodes this one reads, in order of first appearance (args, then kwargs)."""
        return list(self._inputs)

    def update_arg(self, index: int, value: Any) -> None:
        """Replace positional argument ``index``."""
        args = list(self._args)
        args[index] = value
        self.args = tuple(args)

    def update_kwarg(self, key: str, value: Any) -> None:
        """Set keyword argument ``key``."""
        kwargs = dict(self._kwargs)
        kwargs[key] = value
        self.kwargs = kwargs

    def replace_input_with(self, old: Node, new: Any) -> None:
        """Read ``new`` wherever this node read ``old``."""
        swap = lambda n: new if n is old else n
        self._set_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(
        self, other: Any, only_if: Callable[[Node], bool] | None = None
    ) -> list[Node]:
        """Make every user read ``other`` instead of this node; returns the users changed.

        ``only_if(user)`` limits the rewrite to some users, e.g. to keep the node that computes
        ``other`` from this one reading itself.
        """
        changed = [u for u in list(self.users) if only_if is None or only_if(u)]
        for user in changed:
            user.replace_input_with(self, other)
        return changed

    def _set_args_kwargs(self, args: tuple, kwargs: dict[str, Any]) -> None:
        inputs: dict[Node, None] = {}
        for n in iter_nodes(args):
            inputs.setdefault(n, None)
        for n in iter_nodes(kwargs):
            inputs.setdefault(n, None)
        for old in self._inputs:
            if old not in inputs:
                old.users.pop(self, None)
        for n in inputs:
            n.users.setdefault(self, None)
        self._args, self._kwargs, self._inputs = args, kwargs, inputs

    # -- position in the graph ---------------------------------------------------------------

    @property
    def next(self) -> Node:
        """The following node (the graph's sentinel after the last one)."""
        return self._next

    @property
    def prev(self) -> Node:
        """The preceding node (the graph's sentinel before the first one)."""
        return self._prev

    def prepend(self, node: Node) -> None:
        """Move or insert ``node`` just before this one."""
        if node is self:
            return
        if node.graph is not self.graph or node._erased or self._erased:
            raise ValueError(f"cannot move {node.name} there: not both live nodes of one graph")
        node._unlink()
        node._prev, node._next = self._prev, self
        self._prev._next = node
        self._prev = node

    def append(self, node: Node) -> None:
        """Move or insert ``node`` just after this one."""
        self._next.prepend(node)

    def _unlink(self) -> None:
        self._prev._next = self._next
        self._next._prev = self._prev
        self._prev = self._next = self

    # -- facts -------------------------------------------------------------------------------

    def is_impure(self) -> bool:
        """Whether removing or merging this node could change what the program does."""
        if self.op != "call_function":
            return True
        target = self.target
        return bool(getattr(target, "impure", False) or getattr(target, "checks", False))

    def __repr__(self) -> str:
        return self.name
