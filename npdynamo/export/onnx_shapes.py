"""The ONNX form of shape ops, creation, indexing and control flow (see ``onnx_ops.py``).

``cond`` becomes ``If`` (each branch a subgraph reading the operands by their outer names);
``while_loop`` becomes ``Loop`` with no trip count, its condition computed once before the loop
and again at the end of each body; ``fori_loop`` becomes ``Loop`` with the trip count
``max(upper - lower, 0)`` and the index ``lower + iteration``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo.export.onnx_ops import _ndim as _nd
from npdynamo.export.onnx_ops import _no_kwargs, _out, _shape
from npdynamo.export.onnx_pairs import Pair, part_dtype, parts
from npdynamo.export.onnx_writer import Lowering, Scope, _scalar_dtype
from npdynamo.export.schema import ExportError
from npdynamo.fx.node import Node
from npdynamo.fx.subgraphs import is_subgraph
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.symbolic import SymInt

LOWERINGS: dict[str, Callable[..., Any]] = {}
_MAX = np.iinfo(np.int64).max
_MIN = np.iinfo(np.int64).min


def _as(L: Lowering, node: Node, x: Any) -> str:
    return L.value(x, _out(node))


# -- shapes --------------------------------------------------------------------------------------
def _reshape(L: Lowering, node: Node, x: Any, shape: Any) -> str:
    return L.add("Reshape", [_as(L, node, x), L.shape(shape)], allowzero=1)


def _flat(L: Lowering, node: Node, x: Any, **kw: Any) -> str:
    _no_kwargs(kw)
    return L.add("Reshape", [_as(L, node, x), L.ints([-1])])


def _transpose(L: Lowering, node: Node, x: Any, axes: Any = None) -> str:
    n = _nd(x)
    perm = list(range(n))[::-1] if axes is None else [a % n for a in axes]
    return L.add("Transpose", [_as(L, node, x)], perm=perm)


def _swapaxes(L: Lowering, node: Node, x: Any, axis1: int, axis2: int) -> str:
    n = _nd(x)
    perm = list(range(n))
    perm[axis1 % n], perm[axis2 % n] = perm[axis2 % n], perm[axis1 % n]
    return L.add("Transpose", [_as(L, node, x)], perm=perm)


def _moveaxis(L: Lowering, node: Node, x: Any, source: Any, destination: Any) -> str:
    n = _nd(x)
    src = [s % n for s in (source if isinstance(source, (tuple, list)) else (source,))]
    dst = [d % n for d in (destination if isinstance(destination, (tuple, list))
                           else (destination,))]
    order = [a for a in range(n) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return L.add("Transpose", [_as(L, node, x)], perm=order)


def _expand_dims(L: Lowering, node: Node, x: Any, axis: Any) -> str:
    n = _nd(x) + (len(axis) if isinstance(axis, (tuple, list)) else 1)
    axes = sorted(a % n for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    return L.add("Unsqueeze", [_as(L, node, x), L.ints(axes)])


def _squeeze(L: Lowering, node: Node, x: Any, axis: Any = None) -> str:
    shape = _shape(x)
    if axis is None:
        axes = [d for d, s in enumerate(shape) if type(s) is int and s == 1]
    else:
        axes = [a % len(shape) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    if not axes:
        return L.add("Identity", [_as(L, node, x)])
    return L.add("Squeeze", [_as(L, node, x), L.ints(axes)])


def _expand(L: Lowering, node: Node, x: Any, shape: Any) -> str:
    return L.add("Expand", [_as(L, node, x), L.shape(shape)])


def _concatenate(L: Lowering, node: Node, arrays: Any, axis: Any = 0, **kw: Any) -> str:
    _no_kwargs(kw, ("dtype",))
    if axis is None:
        parts = [L.add("Reshape", [_as(L, node, a), L.ints([-1])]) for a in arrays]
        axis = 0
    else:
        parts = [_as(L, node, a) for a in arrays]
    return L.add("Concat", parts, axis=axis % max(_nd(arrays[0]), 1))


def _stack(L: Lowering, node: Node, arrays: Any, axis: int = 0, **kw: Any) -> str:
    _no_kwargs(kw, ("dtype",))
    axis %= _nd(arrays[0]) + 1
    parts = [L.add("Unsqueeze", [_as(L, node, a), L.ints([axis])]) for a in arrays]
    return L.add("Concat", parts, axis=axis)


def _at_least(L: Lowering, node: Node, x: Any, n: int) -> str:
    value, nd = _as(L, node, x), _nd(x)
    if nd >= n:
        return value
    # NumPy's placement: (N,) -> (1, N) and (1, N, 1); (M, N) -> (M, N, 1)
    axes = {1: {0: [0]}, 2: {0: [0, 1], 1: [0]}, 3: {0: [0, 1, 2], 1: [0, 2], 2: [2]}}[n][nd]
    return L.add("Unsqueeze", [value, L.ints(axes)])


def _vstack(L: Lowering, node: Node, arrays: Any, **kw: Any) -> str:
    _no_kwargs(kw, ("dtype",))
    return L.add("Concat", [_at_least(L, node, a, 2) for a in arrays], axis=0)


def _hstack(L: Lowering, node: Node, arrays: Any, **kw: Any) -> str:
    _no_kwargs(kw, ("dtype",))
    axis = 0 if _nd(arrays[0]) == 1 else 1
    return L.add("Concat", [_at_least(L, node, a, 1) for a in arrays], axis=axis)


def _flip(L: Lowering, node: Node, x: Any, axis: Any = None) -> str:
    n = _nd(x)
    axes = list(range(n)) if axis is None else [
        a % n for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    k = len(axes)
    return L.add("Slice", [_as(L, node, x), L.ints([-1] * k), L.ints([_MIN] * k), L.ints(axes),
                           L.ints([-1] * k)])


def _tile(L: Lowering, node: Node, x: Any, reps: Any) -> str:
    reps = list(reps) if isinstance(reps, (tuple, list)) else [reps]
    value, n = _as(L, node, x), _nd(x)
    if len(reps) > n:
        value = L.add("Unsqueeze", [value, L.ints(list(range(len(reps) - n)))])
    reps = [1] * (n - len(reps)) + reps
    return L.add("Tile", [value, L.shape(reps)])


def _trilu(upper: int) -> Callable:
    def lower(L: Lowering, node: Node, x: Any, k: int = 0) -> str:
        return L.add("Trilu", [_as(L, node, x), L.ints([k])], upper=upper)
    return lower


LOWERINGS.update(
    reshape=_reshape, ravel=_flat, flatten=_flat, transpose=_transpose, swapaxes=_swapaxes,
    moveaxis=_moveaxis, expand_dims=_expand_dims, squeeze=_squeeze, broadcast_to=_expand,
    broadcast_view=_expand, concatenate=_concatenate, stack=_stack, vstack=_vstack,
    hstack=_hstack, flip=_flip, tile=_tile, tril=_trilu(0), triu=_trilu(1),
)


# -- creation -----------------------------------------------------------------------------------
def _filled(L: Lowering, node: Node, shape: str, value: Any) -> str:
    out = _out(node)
    tensor = L.onnx.numpy_helper.from_array(np.asarray([value], dtype=out), L.fresh("fill"))
    return L.add("ConstantOfShape", [shape], value=tensor)


def _constant_of(fill: Any) -> Callable:
    def lower(L: Lowering, node: Node, shape: Any = None, dtype: Any = None, **kw: Any) -> str:
        _no_kwargs(kw, ("order",))
        return _filled(L, node, L.shape(shape), fill)
    return lower


def _like(fill: Any) -> Callable:
    def lower(L: Lowering, node: Node, x: Any, dtype: Any = None, shape: Any = None) -> str:
        dims = L.shape(shape) if shape is not None else L.add("Shape", [L.scope.env[x]])
        return _filled(L, node, dims, fill)
    return lower


def _full(L: Lowering, node: Node, fill: Any, shape: Any = None, dtype: Any = None) -> str:
    if isinstance(fill, Node):
        raise ExportError("full with an array fill value")
    return _filled(L, node, L.shape(shape), fill)


def _full_like(L: Lowering, node: Node, x: Any, fill: Any, dtype: Any = None,
               shape: Any = None) -> str:
    if isinstance(fill, Node):
        raise ExportError("full_like with an array fill value")
    return _like(fill)(L, node, x, dtype, shape)


def _arange(L: Lowering, node: Node, start: Any = 0, stop: Any = None, step: Any = 1,
            dtype: Any = None) -> str:
    out = _out(node)
    if out.kind not in "fi":
        raise ExportError(f"arange of {out}")
    return L.add("Range", [L.value(start, out), L.value(stop, out), L.value(step, out)])


def _eye(L: Lowering, node: Node, N: Any, M: Any = None, k: int = 0, dtype: Any = None) -> str:
    zeros = _filled(L, node, L.shape((N, N if M is None else M)), 0)
    if not isinstance(k, int):
        raise ExportError("eye with a computed k")
    return L.add("EyeLike", [zeros], k=k)


LOWERINGS.update(
    zeros=_constant_of(0), ones=_constant_of(1), empty=_constant_of(0), zeros_like=_like(0),
    ones_like=_like(1), empty_like=_like(0), full=_full, full_like=_full_like, arange=_arange,
    eye=_eye,
)


# -- indexing ------------------------------------------------------------------------------------
def _int_array(item: Any) -> bool:
    return isinstance(item, Node) and isinstance(item.meta.get("val"), ArrayMeta) \
        and item.meta["val"].dtype.kind in "iu" and item.meta["val"].shape != ()


def _gather_indices(L: Lowering, data: str, items: list) -> str:
    """Index arrays over the leading axes of ``x`` as one GatherND/ScatterND index tensor
    (broadcast together, negative indices wrapped as NumPy does)."""
    values = [L.value(i, np.int64) for i in items]
    zero = values[0]
    for v in values[1:]:
        zero = L.add("Add", [zero, v])
    zero = L.add("Mul", [zero, L.const(0, np.int64)])
    columns = []
    for d, v in enumerate(values):
        v = L.add("Add", [v, zero])
        size = L.add("Squeeze", [L.add("Shape", [data], start=d, end=d + 1), L.ints([0])])
        wrapped = L.add("Where", [L.add("Less", [v, L.const(0, np.int64)]),
                                  L.add("Add", [v, size]), v])
        columns.append(L.add("Unsqueeze", [wrapped, L.ints([-1])]))
    return L.add("Concat", columns, axis=-1)


def _out_meta_dtype(x: Any) -> np.dtype:
    meta = x.meta.get("val")
    return meta.dtype if isinstance(meta, ArrayMeta) else _scalar_dtype(meta)


def _getitem(L: Lowering, node: Node, x: Any, index: Any) -> str:
    return _select(L, _as(L, node, x), _nd(x), index)


def _select(L: Lowering, value: str, n: int, index: Any) -> str:
    """``value[index]`` for an ONNX value of ``n`` dimensions."""
    items = list(index) if type(index) is tuple else [index]
    if len(items) > 1 and all(_int_array(i) for i in items) and len(items) <= n:
        return L.add("GatherND", [value, _gather_indices(L, value, items)])
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (n - used)
    axis, advanced = 0, 0
    for item in items:
        if item is None:
            value = L.add("Unsqueeze", [value, L.ints([axis])])
            axis += 1
        elif type(item) is slice:
            if item != slice(None):
                step = 1 if item.step is None else item.step
                if not isinstance(step, int) or step == 0:
                    raise ExportError("a slice step that is not a constant int")
                lo = item.start if item.start is not None else (0 if step > 0 else _MAX)
                hi = item.stop if item.stop is not None else (_MAX if step > 0 else _MIN)
                value = L.add("Slice", [value, _bound(L, lo), _bound(L, hi), L.ints([axis]),
                                        L.ints([step])])
            axis += 1
        elif type(item) is int or isinstance(item, SymInt) or _is_index_scalar(item):
            at = L.value(item, np.int64)
            value = L.add("Gather", [value, at], axis=axis)
        elif isinstance(item, Node) and isinstance(item.meta.get("val"), ArrayMeta) \
                and item.meta["val"].dtype.kind in "iu" and advanced == 0:
            value = L.add("Gather", [value, L.value(item, np.int64)], axis=axis)
            axis += len(item.meta["val"].shape)
            advanced += 1
        else:
            raise ExportError(f"an index {item!r} (boolean masks and several index arrays "
                              "have no ONNX form here)")
    return value


def _bound(L: Lowering, b: Any) -> str:
    if isinstance(b, Node):
        return L.add("Reshape", [L.value(b, np.int64), L.ints([1])])
    return L.size(b) if isinstance(b, SymInt) else L.ints([b])


def _bool_array(item: Any) -> bool:
    meta = item.meta.get("val") if isinstance(item, Node) else None
    return isinstance(meta, ArrayMeta) and meta.dtype == np.bool_ and meta.shape != ()


def _is_index_scalar(item: Any) -> bool:
    if not isinstance(item, Node):
        return False
    meta = item.meta.get("val")
    return not isinstance(meta, ArrayMeta) or (meta.shape == () and meta.dtype.kind in "iu")


def _tuple_item(L: Lowering, node: Node, t: Any, i: int) -> str:
    return L.scope.env[t][i]


def _index_add(L: Lowering, node: Node, x: Any, index: Any, value: Any) -> str:
    """``np.add.at`` on a copy: ScatterND adding every update, repeated indices included."""
    items = list(index) if type(index) is tuple else [index]
    if not all(_int_array(i) for i in items) or len(items) > _nd(x):
        raise ExportError("index_add at indices other than integer arrays")
    out = _out(node)
    data = L.value(x, out)
    indices = _gather_indices(L, data, items)
    shape = L.add("Concat", [L.add("Shape", [indices], end=-1),
                             L.add("Shape", [data], start=len(items))], axis=0)
    updates = L.add("Expand", [L.value(value, out), shape])
    return L.add("ScatterND", [data, indices, updates], reduction="add")


def _setitem(L: Lowering, node: Node, x: Any, index: Any, value: Any) -> str:
    """A copy of ``x`` with ``x[index] = value``: the flat positions ``index`` selects (the
    same indexing applied to ``arange(size).reshape(shape)``) are overwritten by
    ScatterElements. Index arrays could repeat a position, where NumPy keeps the last write
    and ONNX leaves the order open: only slices, ints and None are written here."""
    items = index if type(index) is tuple else (index,)
    if len(items) == 1 and _bool_array(items[0]) and _nd(value) == 0:
        # x[mask] = scalar: every selected element gets the same value, whatever the order
        out = _out(node)
        flags = L.value(items[0], np.bool_)
        if _nd(items[0]) < _nd(x):
            flags = L.add("Unsqueeze", [flags, L.ints(list(range(_nd(items[0]), _nd(x))))])
        return L.add("Where", [flags, L.value(value, out), L.value(x, out)])
    if any(isinstance(i, Node) and not _is_index_scalar(i) for i in items):
        raise ExportError("an assignment through index arrays, or of several values through "
                          "a mask")
    out = _out(node)
    data = L.value(x, out)
    shape = L.add("Shape", [data])
    count = L.add("ReduceProd", [shape], keepdims=1)
    positions = L.add("Reshape", [L.add("Range", [L.const(0, np.int64),
                                                  L.add("Squeeze", [count, L.ints([0])]),
                                                  L.const(1, np.int64)]), shape])
    chosen = _select(L, positions, _nd(x), index)
    updates = L.add("Expand", [L.value(value, out), L.add("Shape", [chosen])])
    flat = L.add("ScatterElements", [
        L.add("Reshape", [data, L.ints([-1])]), L.add("Reshape", [chosen, L.ints([-1])]),
        L.add("Reshape", [updates, L.ints([-1])])], axis=0)
    return L.add("Reshape", [flat, shape])


LOWERINGS.update(getitem=_getitem, tuple_item=_tuple_item, index_add=_index_add,
                 setitem=_setitem)


# -- control flow --------------------------------------------------------------------------------
def _operands(L: Lowering, gm: Any, args: Any, skip: int = 0) -> list[str]:
    """The outer names of ``args``, cast to the dtypes the subgraph's placeholders expect."""
    metas = [p.meta.get("val") for p in gm.graph.placeholders][skip:]
    out = []
    for arg, meta in zip(args, metas):
        dtype = meta.dtype if isinstance(meta, ArrayMeta) else _scalar_dtype(meta)
        out.append(parts(L, arg, part_dtype(dtype)) if dtype.kind == "c" else L.value(arg, dtype))
    return out


def _flat(values: list) -> list[str]:
    """Loop-carried values as ONNX values: a complex one is two (its parts)."""
    return [v for value in values for v in (value if isinstance(value, Pair) else (value,))]


def _regroup(names: list[str], metas: list) -> tuple:
    """``_flat`` undone: the loop's outputs, a complex one as its ``Pair``."""
    out, names = [], list(names)
    for meta in metas:
        if isinstance(meta, ArrayMeta) and meta.dtype.kind == "c":
            out.append(Pair(names.pop(0), names.pop(0)))
        else:
            out.append(names.pop(0))
    return tuple(out)


def _inline(L: Lowering, gm: Any, names: list[str]) -> list[str]:
    """``gm`` lowered into the current scope with its placeholders bound to ``names``."""
    scope = Scope(gm.graph, dict(zip(gm.graph.placeholders, names)))
    scope.nodes = L.scope.nodes
    return [name for name, _node in L.lower(scope)]


def _branch(L: Lowering, gm: Any, names: list[str], tag: str):
    scope, _inputs, outputs = L.subgraph(gm, names, tag)
    return L.helper.make_graph(scope.nodes, L.fresh(tag), [], outputs)


def _cond(L: Lowering, node: Node, pred: Any, true_fn: Any, false_fn: Any, operands: Any,
          true_extra: Any = (), false_extra: Any = ()) -> tuple:
    if not (is_subgraph(true_fn) and is_subgraph(false_fn)):
        raise ExportError("cond without its branches as graphs")
    then = _branch(L, true_fn, _operands(L, true_fn, (*operands, *true_extra)), "then")
    other = _branch(L, false_fn, _operands(L, false_fn, (*operands, *false_extra)), "else")
    count = len(node.meta["val"])
    outs = L.add("If", [L.value(pred, np.bool_)], outputs=count, then_branch=then,
                 else_branch=other)
    return tuple(outs) if count > 1 else (outs,)


def _loop_inputs(L: Lowering, carried_nodes: list) -> tuple[str, str, list[str], list]:
    it, flag = L.fresh("iter"), L.fresh("cond_in")
    names = _regroup([L.fresh("carried") for meta in carried_nodes
                      for _ in range(1 + _is_complex(meta))], carried_nodes)
    infos = [L.helper.make_tensor_value_info(it, L.elem_type(np.int64), []),
             L.helper.make_tensor_value_info(flag, L.elem_type(np.bool_), [])]
    for name, meta in zip(names, carried_nodes):
        infos += _infos(L, name, meta)
    return it, flag, list(names), infos


def _is_complex(meta: Any) -> bool:
    return isinstance(meta, ArrayMeta) and meta.dtype.kind == "c"


def _infos(L: Lowering, name: Any, meta: Any) -> list:
    if isinstance(name, Pair):
        part = ArrayMeta(meta.shape, part_dtype(meta.dtype))
        return [_info(L, name.re, part), _info(L, name.im, part)]
    return [_info(L, name, meta)]


def _info(L: Lowering, name: str, meta: Any):
    if isinstance(meta, ArrayMeta):
        return L.helper.make_tensor_value_info(name, L.elem_type(meta.dtype), None)
    return L.helper.make_tensor_value_info(name, L.elem_type(_scalar_dtype(meta)), [])


def _loop_body(L: Lowering, graph_name: str, nodes: list, infos: list, flag_out: str,
               results: list[str], metas: list):
    outputs = [L.helper.make_tensor_value_info(flag_out, L.elem_type(np.bool_), [])]
    for res, meta in zip(results, metas):
        if _is_complex(meta) and not isinstance(res, Pair):
            raise ExportError("a complex loop value held as a real one")
        finals = _regroup([L.fresh("carried_out") for _ in _flat([res])], [meta])[0]
        for r, f in zip(_flat([res]), _flat([finals])):
            nodes.append(L.helper.make_node("Identity", [r], [f]))
        outputs += _infos(L, finals, meta)
    return L.helper.make_graph(nodes, L.fresh(graph_name), infos, outputs)


def _while_loop(L: Lowering, node: Node, cond_fn: Any, body_fn: Any, carried: Any,
                cond_extra: Any = (), body_extra: Any = ()) -> tuple:
    metas = list(node.meta["val"])
    start = _operands(L, body_fn, carried)
    cond_outer = _operands(L, cond_fn, cond_extra, skip=len(carried))
    body_outer = _operands(L, body_fn, body_extra, skip=len(carried))
    (first,) = _inline(L, cond_fn, [*start, *cond_outer])
    outer = L.scope
    it, flag, names, infos = _loop_inputs(L, metas)
    body = Scope(body_fn.graph, {})
    L.scope = body
    try:
        new = _inline(L, body_fn, [*names, *body_outer])
        (test,) = _inline(L, cond_fn, [*new, *cond_outer])
        graph = _loop_body(L, "while_body", body.nodes, infos, L.cast(test, np.bool_, np.bool_),
                           new, metas)
    finally:
        L.scope = outer
    return _loop(L, ["", first, *_flat(start)], graph, metas)


def _loop(L: Lowering, inputs: list, graph: Any, metas: list) -> tuple:
    count = sum(1 + _is_complex(m) for m in metas)
    outs = L.add("Loop", inputs, outputs=count, body=graph)
    return _regroup(outs if count > 1 else [outs], metas)


def _fori_loop(L: Lowering, node: Node, lower: Any, upper: Any, body_fn: Any, carried: Any,
               body_extra: Any = ()) -> tuple:
    metas = list(node.meta["val"])
    start = _operands(L, body_fn, carried, skip=1)
    extra = _operands(L, body_fn, body_extra, skip=1 + len(carried))
    lo, hi = L.value(lower, np.int64), L.value(upper, np.int64)
    trips = L.add("Max", [L.add("Sub", [hi, lo]), L.const(0, np.int64)])
    outer = L.scope
    it, flag, names, infos = _loop_inputs(L, metas)
    body = Scope(body_fn.graph, {})
    L.scope = body
    try:
        index = L.add("Add", [lo, it])
        new = _inline(L, body_fn, [index, *names, *extra])
        graph = _loop_body(L, "fori_body", body.nodes, infos, L.add("Identity", [flag]), new,
                           metas)
    finally:
        L.scope = outer
    return _loop(L, [trips, "", *_flat(start)], graph, metas)


LOWERINGS.update(cond=_cond, while_loop=_while_loop, fori_loop=_fori_loop)
