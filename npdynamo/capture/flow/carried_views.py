"""Carried views in a formed ``for`` loop: a local that is a view of another carried local's
array (``u = U[1:-1, 1:-1]`` before ``for t ...``) is made again from that array's value inside
the body instead of being carried itself (used by ``for_loops._form``)."""

from __future__ import annotations

from npdynamo.capture.side_effects import view_of
from npdynamo.capture.values import ArrayValue, Value


def root_of(array: ArrayValue) -> ArrayValue:
    while array.base is not None:
        array = array.base
    return array


def views_of_carried(frame, names: list[str]) -> dict[str, tuple[str, ArrayValue]]:
    """name -> (root's name, view) of the carried locals that are views of another carried
    local's array (``u = U[1:-1, 1:-1]`` before ``for t ...: L = U[:-2] + ...; u += L``).
    Such a view is not carried as a value of its own: the body sees it made again from the
    root's value (so a write through it reaches the root's reads, as in NumPy), and after the
    loop the outer view follows the root's result (``side_effects.write_array``)."""
    roots = {}
    for name in names:
        value = frame.locals.get(name)
        if isinstance(value, ArrayValue) and value.base is None:
            roots.setdefault(id(value), name)
    views = {}
    for name in names:
        value = frame.locals.get(name)
        if not isinstance(value, ArrayValue) or value.base is None:
            continue
        root = root_of(value)
        if id(root) in roots and _plain_recipes(value):
            views[name] = (roots[id(root)], value)
    return views


def _plain_recipes(view: ArrayValue) -> bool:
    """Every link from ``view`` to its root is made from the base by constants only (no value
    of the graph), so it can be made again inside the body from the root's placeholder."""
    while view.base is not None:
        _op, args, kwargs = view.recipe
        if _holds_value((args[1:], kwargs)):
            return False
        view = view.base
    return True


def _holds_value(obj) -> bool:
    if isinstance(obj, Value):
        return True
    if isinstance(obj, slice):
        obj = (obj.start, obj.stop, obj.step)
    if isinstance(obj, dict):
        obj = tuple(obj.values())
    return isinstance(obj, (tuple, list)) and any(_holds_value(v) for v in obj)


def remake_views(ctx, frame, local: dict, views: dict) -> dict[str, ArrayValue]:
    """The views of ``views`` made again from the body's values of their roots."""
    made: dict[int, ArrayValue] = {}

    def remake(value: ArrayValue, root: ArrayValue) -> ArrayValue:
        if value.base is None:
            return root
        if id(value) not in made:
            base = remake(value.base, root)
            op, args, kwargs = value.recipe
            args = (base, *args[1:])
            view = ctx.call_op(op, args, dict(kwargs))
            view_of(view, base, op, args, dict(kwargs))
            made[id(value)] = view
        return made[id(value)]

    out = {}
    for name, (root_name, value) in views.items():
        out[name] = local[name] = remake(value, local[root_name])
    return out


def views_kept(frame, local: dict, views: dict, made: dict) -> None:
    """After the body: each remade view and its root are still bound to their names (a root
    rebound to a new array would leave the view on the old one, which a remade view would not
    be in the next iteration)."""
    for name, (root_name, _value) in views.items():
        if local.get(name) is not made[name] or root_of(made[name]) is not local.get(root_name):
            raise frame.unsupported(
                f"the loop rebinds {name} or {root_name}, a view and the array it views")


__all__ = ["remake_views", "root_of", "views_kept", "views_of_carried"]
