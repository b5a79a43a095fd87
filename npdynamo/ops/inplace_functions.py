"""NumPy functions that write into their first argument: ``np.copyto`` (with ``where=``),
``np.putmask``, ``np.fill_diagonal`` and ``np.put_along_axis``; and ``mask_update``, the op of
``x[mask] op= v`` (``capture/masked.py``).

Each is a functional op returning the updated copy (its ``impl`` runs the NumPy function on a
copy, so values, casts and repetitions are NumPy's own); the binder returns a ``Composite``
whose ``build`` records the op and writes the result back into the argument through the
capture stage's write-back machinery (``Builder.write``, as for ``x[mask] = v``), then returns
None as NumPy does. Rules check what NumPy checks on shapes and dtypes; value-dependent errors
(an index out of range) are raised by NumPy at run time, where a graph that raises reruns in
Python before anything is written.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo.ops import canonical as C
from npdynamo.ops.binding import functions
from npdynamo.ops.composite import Builder, Composite
from npdynamo.ops.elementwise import infer_inplace
from npdynamo.ops.indexing import boolean_mask
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.registry import REGISTRY, REQUIRED, Op, UnsupportedArguments, register
from npdynamo.ops.rules import fmt_shape, is_py_scalar, normalize_axis, to_meta

_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _fits(value: tuple, target: tuple) -> bool:
    """Whether ``value`` broadcasts into ``target`` without changing it."""
    return len(value) <= len(target) and all(
        v in (1, t) for v, t in zip(reversed(value), reversed(target)))


def _np_shape(shape: tuple) -> str:
    return fmt_shape(shape).replace(" ", "")


def _cast_check(value: object, dtype: np.dtype, casting: str) -> None:
    """NumPy's cast check and error, on a 0-d stand-in (a constant's own value)."""
    if isinstance(value, ArrayMeta):
        value = np.zeros((), value.dtype)
    elif isinstance(value, ScalarMeta):
        value = value.type(0)
    np.copyto(np.empty((), dtype), value, casting=casting)


# -- copyto --------------------------------------------------------------------------------
def _copyto(dst, src, where=True, *, casting="same_kind"):
    out = dst.copy()
    np.copyto(out, src, casting=casting, where=where)
    return out


def _copyto_rule(dst: object, src: object, where: object = True, *,
                 casting: str = "same_kind") -> ArrayMeta:
    meta = to_meta("copyto", dst)
    if casting not in _CASTINGS:
        raise ValueError("casting must be one of 'no', 'equiv', 'safe', 'same_kind', 'unsafe' "
                         f"(got {casting!r})")
    src_shape = () if is_py_scalar(src) or isinstance(src, ScalarMeta) else to_meta(
        "copyto", src).shape
    _cast_check(src if not isinstance(src, (list, tuple)) else np.asarray(src), meta.dtype,
                casting)  # NumPy checks the casts first, then the shapes
    mask = None if where is True else to_meta("copyto", where)
    if mask is not None and not np.can_cast(mask.dtype, np.bool_, "safe"):
        raise TypeError(f"Cannot cast array data from dtype('{mask.dtype}') to "
                        "dtype('bool') according to the rule 'safe'")
    if not _fits(src_shape, meta.shape):
        raise ValueError(f"could not broadcast input array from shape {_np_shape(src_shape)} "
                         f"into shape {_np_shape(meta.shape)}")
    if mask is not None:
        if not _fits(mask.shape, meta.shape):
            raise ValueError(f"could not broadcast where mask from shape "
                             f"{_np_shape(mask.shape)} into shape {_np_shape(meta.shape)}")
    return ArrayMeta(meta.shape, meta.dtype)


@functions("copyto")
def _copyto_binder(dst, src, casting="same_kind", where=True):
    C.static("copyto", "casting", casting)
    if where is not True and not C.is_array_value(where):
        where = C.operand("copyto", where)
    op, args, kwargs = C.canon(REGISTRY["copyto"], [dst, C.operand("copyto", src),
                                                    *([where] if where is not True else [])],
                               casting=casting)
    return _written("copyto", dst, op, args, kwargs)


# -- putmask -------------------------------------------------------------------------------
def _putmask(a, mask, values):
    out = a.copy()
    np.putmask(out, mask, values)
    return out


def _putmask_rule(a: object, mask: object, values: object) -> ArrayMeta:
    meta, mask_meta = to_meta("putmask", a), to_meta("putmask", mask)
    if mask_meta.size != meta.size:
        raise ValueError("putmask: mask and data must be the same size")
    if not (is_py_scalar(values) or isinstance(values, ScalarMeta)):
        _cast_check(to_meta("putmask", values), meta.dtype, "safe")
    return ArrayMeta(meta.shape, meta.dtype)


@functions("putmask")
def _putmask_binder(a, /, mask, values):
    op, args, kwargs = C.canon(REGISTRY["putmask"], [a, C.operand("putmask", mask),
                                                     C.operand("putmask", values)])
    return _written("putmask", a, op, args, kwargs)


# -- fill_diagonal -------------------------------------------------------------------------
def _fill_diagonal(a, val, *, wrap=False):
    out = a.copy()
    np.fill_diagonal(out, val, wrap=wrap)
    return out


def _fill_diagonal_rule(a: object, val: object, *, wrap: bool = False) -> ArrayMeta:
    meta = to_meta("fill_diagonal", a)
    if meta.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if meta.ndim > 2 and len(set(meta.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return ArrayMeta(meta.shape, meta.dtype)


@functions("fill_diagonal")
def _fill_diagonal_binder(a, val, wrap=False):
    op, args, kwargs = C.canon(REGISTRY["fill_diagonal"], [a, C.operand("fill_diagonal", val)],
                               wrap=C.flag("fill_diagonal", "wrap", wrap))
    return _written("fill_diagonal", a, op, args, kwargs)


# -- put_along_axis ------------------------------------------------------------------------
def _put_along_axis(arr, indices, values, *, axis):
    out = arr.copy()
    np.put_along_axis(out, indices, values, axis)
    return out


def _put_along_axis_rule(arr: object, indices: object, values: object, *,
                         axis: int | None) -> ArrayMeta:
    meta, idx = to_meta("put_along_axis", arr), to_meta("put_along_axis", indices)
    if axis is None and idx.ndim != 1:
        raise ValueError("when axis=None, `indices` must have a single dimension.")
    if axis is not None:
        normalize_axis("put_along_axis", axis, meta.ndim)
    if idx.dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    if axis is None:
        return ArrayMeta(meta.shape, meta.dtype)
    if idx.ndim != meta.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    for i, (n, m) in enumerate(zip(idx.shape, meta.shape)):
        if i != axis % meta.ndim and n not in (1, m):
            raise UnsupportedArguments("put_along_axis: indices that broadcast against arr")
    return ArrayMeta(meta.shape, meta.dtype)


@functions("put_along_axis")
def _put_along_axis_binder(arr, indices, values, axis):
    axis = C.int_axis("put_along_axis", axis)
    op, args, kwargs = C.canon(REGISTRY["put_along_axis"],
                               [arr, indices, C.operand("put_along_axis", values)], axis=axis)
    return _written("put_along_axis", arr, op, args, kwargs)


# -- x[mask] op= v (capture/masked.py) ----------------------------------------------------
def _mask_update(current, array, read_mask, store_mask, value, *, ufunc: str):
    selected = array[read_mask]
    if ufunc == "power":  # ndarray.__ipow__ squares for the exponent 2 (ops.pow_shortcut)
        selected **= value
    else:
        getattr(np, ufunc)(selected, value, out=selected)  # what ndarray.__iadd__ & co. do
    out = current.copy()
    out[store_mask] = selected
    return out


def mask_update_rule(current: object, array: object, read_mask: object, store_mask: object,
                      value: object, *, ufunc: str) -> ArrayMeta:
    meta = ArrayMeta(current.shape, current.dtype)
    mask = boolean_mask(read_mask)
    if mask is None or boolean_mask(store_mask) is None:
        raise UnsupportedArguments("mask_update: the index is not one boolean array")
    REGISTRY["setitem"].infer(meta, (read_mask,), 0)  # the read's mask fits x (IndexError)
    rest = meta.shape[mask.ndim:]
    # the selection has shape (k, *rest) for a k only the data knows: check with k = 1 and
    # k = 2, and refuse a value whose fit would depend on k
    results = []
    for k in (1, 2):
        selection = ArrayMeta((k, *rest), array.dtype)
        try:
            results.append(infer_inplace(REGISTRY[ufunc], selection, value))
        except ValueError:
            raise UnsupportedArguments(
                "a value whose fit depends on how many elements the mask selects") from None
    REGISTRY["setitem"].infer(meta, (store_mask,), 0)  # the mask fits x, as NumPy checks
    return meta


register(Op("mask_update", _mask_update, mask_update_rule, differentiable=False,
                    defaults={"ufunc": REQUIRED}))


# -- y[mask] = f(x[mask], ...) (capture/masked.py) ----------------------------------------
def run_program(program: tuple, leaf: Callable[[int], Any], apply: Callable[[str, Any, Any], Any],
                const: Callable[[Any], Any] | None = None) -> Any:
    """Evaluate a masked expression's postfix ``program`` (``("leaf", i)``, ``("const", c)``,
    ``("op", symbol)`` items) in any domain: values, metas, ONNX names. ``leaf(i)`` is the
    ``i``-th leaf's value, ``const(c)`` a constant's (``c`` itself without ``const``: no
    lambda default, since the NumPy-only export copies this function's source),
    ``apply(symbol, a, b)`` an operator's."""
    stack: list = []
    for kind, *rest in program:
        if kind == "leaf":
            stack.append(leaf(rest[0]))
        elif kind == "const":
            stack.append(rest[0] if const is None else const(rest[0]))
        else:
            right = stack.pop()
            stack.append(apply(rest[0], stack.pop(), right))
    return stack.pop()


def evaluate_masked(program: tuple, mask, arrays: tuple):
    """Run a masked expression's postfix ``program`` on ``array[mask]`` of each leaf, with
    Python's own operators (``x ** 2`` on an array is what Python computes)."""
    return run_program(program, lambda i: arrays[i][mask],
                       lambda symbol, a, b: _OPERATORS[symbol](a, b))


_OPERATORS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
    "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}


def program_meta(program: tuple, metas: list) -> ArrayMeta:
    """The meta of ``evaluate_masked``'s result, from the leaves' selected metas."""
    from npdynamo.ops.normalize import BINARY_OPERATORS

    return run_program(program, metas.__getitem__,
                       lambda symbol, a, b: BINARY_OPERATORS[symbol].infer(a, b))


def _mask_apply(current, mask, *arrays, program: tuple):
    return mask_apply_into(current.copy(), mask, *arrays, program=program)


def mask_apply_into(current, mask, *arrays, program: tuple):
    """``mask_apply`` writing into ``current`` itself, as ``y[mask] = ...`` does (the eager
    backend, where nothing reads the old contents afterwards): the value is computed first."""
    current[mask] = evaluate_masked(program, mask, arrays)
    return current


def _mask_apply_rule(current: object, mask: object, *arrays: object,
                     program: tuple) -> ArrayMeta:
    meta = to_meta("mask_apply", current)
    mask_meta = boolean_mask(mask)
    if mask_meta is None:
        raise UnsupportedArguments("mask_apply: the index is not one boolean array")
    REGISTRY["setitem"].infer(meta, (mask,), 0)  # the mask fits the array (IndexError)
    rest = meta.shape[mask_meta.ndim:]
    for k in (1, 2):  # the value must fit (k, *rest) whatever k the data gives
        value = program_meta(program, [ArrayMeta((k, *rest), to_meta("mask_apply", a).dtype)
                                       for a in arrays])
        value_shape = value.shape if isinstance(value, ArrayMeta) else ()
        if value_shape not in ((), (k, *rest)):
            raise UnsupportedArguments("mask_apply: a value that does not fit the selection")
        if isinstance(value, ArrayMeta) and value.dtype.kind == "c" and meta.dtype.kind != "c":
            raise UnsupportedArguments("mask_apply: complex values into a real array")
    return ArrayMeta(meta.shape, meta.dtype)


register(Op("mask_apply", _mask_apply, _mask_apply_rule, differentiable=False,
            defaults={"program": REQUIRED}))


# -- f(x[mask], ...).sum() / .mean() (capture/masked.py) -----------------------------------
#: Reductions of a masked expression captured as one op.
MASKED_REDUCTIONS = ("sum", "mean")


def _masked_reduce(mask, *arrays, program: tuple, kind: str):
    return getattr(evaluate_masked(program, mask, arrays), kind)()


def _masked_reduce_rule(mask: object, *arrays: object, program: tuple, kind: str) -> ArrayMeta:
    mask_meta = boolean_mask(mask)
    if mask_meta is None or kind not in MASKED_REDUCTIONS:
        raise UnsupportedArguments("masked_reduce: the index is not one boolean array")
    metas = [to_meta("masked_reduce", a) for a in arrays]
    for meta in metas:
        REGISTRY["setitem"].infer(meta, (mask,), 0)  # the mask fits the array (IndexError)
    value = program_meta(program, [ArrayMeta((2, *m.shape[mask_meta.ndim:]), m.dtype)
                                   for m in metas])
    if not isinstance(value, ArrayMeta):
        raise UnsupportedArguments("masked_reduce: a value that is not an array")
    return REGISTRY[kind].infer(value)


register(Op("masked_reduce", _masked_reduce, _masked_reduce_rule, differentiable=False,
            defaults={"program": REQUIRED, "kind": REQUIRED}))


# -- the write-back ------------------------------------------------------------------------
def _written(name: str, target: object, op: Op, args: tuple, kwargs: dict) -> Composite:
    if not C.is_array_value(target) or isinstance(target, np.generic):
        raise UnsupportedArguments(f"{name} into something that is not an array")

    def build(b: Builder) -> None:
        b.write(target, b.call(op, args, kwargs))

    return Composite(name, build)


# (differentiable=False: VJP rules not written yet, npdynamo.grad raises GradError)
for _op in (
    Op("copyto", _copyto, _copyto_rule, differentiable=False, defaults={"casting": "same_kind"}),
    Op("putmask", _putmask, _putmask_rule, differentiable=False),
    Op("fill_diagonal", _fill_diagonal, _fill_diagonal_rule, differentiable=False,
       defaults={"wrap": False}),
    Op("put_along_axis", _put_along_axis, _put_along_axis_rule, differentiable=False,
       defaults={"axis": REQUIRED}),
):
    register(_op)
