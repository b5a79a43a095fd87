"""Pytrees: nested dicts, lists and tuples of arrays, flattened to leaves and rebuilt.

``grad``/``value_and_grad`` differentiate with respect to whole pytrees (a dict of parameters,
a list of layers) and return gradients in the same structure. Dict key order is kept; named
tuples are rebuilt as themselves; anything that is not a dict, list or tuple is a leaf.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TreeDef:
    """The structure of a pytree without its leaves."""

    kind: type | None  # None for a leaf
    keys: tuple = ()
    children: tuple[TreeDef, ...] = ()

    @property
    def num_leaves(self) -> int:
        if self.kind is None:
            return 1
        return sum(c.num_leaves for c in self.children)


LEAF = TreeDef(None)


def tree_flatten(tree: Any, path: str = "") -> tuple[list[Any], TreeDef, list[str]]:
    """(leaves, structure, leaf paths like ``['w1']`` or ``[0][1]``) of ``tree``."""
    leaves: list[Any] = []
    paths: list[str] = []
    treedef = _flatten(tree, path, leaves, paths)
    return leaves, treedef, paths


def _flatten(tree: Any, path: str, leaves: list[Any], paths: list[str]) -> TreeDef:
    if isinstance(tree, dict):
        keys = tuple(tree)
        children = tuple(_flatten(tree[k], f"{path}[{k!r}]", leaves, paths) for k in keys)
        return TreeDef(type(tree), keys, children)
    if isinstance(tree, (list, tuple)):
        children = tuple(_flatten(v, f"{path}[{i}]", leaves, paths) for i, v in enumerate(tree))
        return TreeDef(type(tree), (), children)
    leaves.append(tree)
    paths.append(path)
    return LEAF


def tree_unflatten(treedef: TreeDef, leaves: list[Any]) -> Any:
    """The pytree of structure ``treedef`` holding ``leaves`` in order."""
    it = iter(leaves)
    tree = _unflatten(treedef, it)
    return tree


def _unflatten(treedef: TreeDef, it: Any) -> Any:
    if treedef.kind is None:
        return next(it)
    values = [_unflatten(c, it) for c in treedef.children]
    kind = treedef.kind
    if issubclass(kind, dict):
        out = kind() if kind is not dict else {}
        out.update(zip(treedef.keys, values))
        return out
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):
        return kind(*values)
    return kind(values)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, treedef, _ = tree_flatten(tree)
    return tree_unflatten(treedef, [fn(x) for x in leaves])
