"""Python builtins under capture: evaluated on tracked values, never called on graph arrays.

``len(x)`` of an array is its guarded shape; ``range``/``enumerate``/``zip`` build iterators the
translator unrolls; ``min``/``max``/``abs``/``sum`` work on numbers and fold arrays into ops where
Python itself would call NumPy (``abs(x)``, ``sum([a, b])``). ``float(x)`` of a graph value is a
graph break. Each handler registers into ``registry.BUILTINS`` with ``@builtin(targets...)`` and
is called as ``handler(frame, target, args, kwargs)``.
"""

from __future__ import annotations

import builtins
import math
import operator
import sys

import numpy as np

from npdynamo import ops
from npdynamo.capture.builder import constant_value, is_constant
from npdynamo.capture.calls import get_attr, graph_number
from npdynamo.capture.containers import (
    check_item_count,
    const_key,
    get_iter,
    items_of,
    new_set,
    truthiness,
)
from npdynamo.capture.errors import UserCodeRaises, python_raised
from npdynamo.capture.flow.for_loops import iterated_next, lazy_range
from npdynamo.capture.flow.ndindex_loops import lazy_ndindex
from npdynamo.capture.flow.row_loops import lazy_rows, row_tuple
from npdynamo.capture.generators import each, is_lazy, lazy_enumerate, lazy_zip, next_item
from npdynamo.capture.identity import object_id, same_object
from npdynamo.capture.mixed_scalars import mixed_fold
from npdynamo.capture.opcalls import op_call
from npdynamo.capture.opcodes.operators import binary_op, unary_op
from npdynamo.capture.registry import BUILTINS, builtin
from npdynamo.capture.special_methods import user_len
from npdynamo.capture.translator import Frame
from npdynamo.capture.values import (
    ArrayValue,
    ComputedNumberValue,
    Const,
    DictValue,
    DictViewValue,
    FunctionValue,
    IteratorValue,
    ListValue,
    MixedScalarValue,
    ScalarInputValue,
    SetValue,
    TupleValue,
    UserObjectValue,
    Value,
)
from npdynamo.ops.scalar_ops import PY_SQRT


def _consts(frame: Frame, args: list[Value], what: str) -> list:
    others = [a for a in args if not isinstance(a, Const)]
    if any(isinstance(a, (ArrayValue, ComputedNumberValue)) for a in others):
        raise frame.unsupported(
            f"{what}() of a graph value needs the value in Python",
            "keep it as an array, or accept a graph break here",
            kind="graph_value_to_python",
        )
    if others:  # a Python object the graph cannot compute with (a Fraction, an iterator, ...)
        names = sorted({type(a.obj).__name__ if isinstance(a, UserObjectValue) else a.kind()
                        for a in others})
        raise frame.unsupported(f"{what}() of a {' or '.join(names)} is not supported")
    return [a.value for a in args]


def _apply(fn, *args, **kwargs):
    return constant_value(_apply_raw(fn, *args, **kwargs))


@builtin(len)
def _len(frame: Frame, target, args, kwargs):
    (obj,) = args
    if isinstance(obj, ArrayValue):
        if obj.meta.ndim == 0:
            raise UserCodeRaises(TypeError("len() of unsized object"))
        return frame.ctx.size_value(obj.meta.shape[0])
    if isinstance(obj, (TupleValue, ListValue, SetValue, DictValue)):
        return Const(obj.length() if hasattr(obj, "length") else len(obj.items))
    if isinstance(obj, DictViewValue):
        return Const(obj.mapping.length())
    if isinstance(obj, Const) and is_constant(obj.value):
        return _apply(len, obj.value)
    if isinstance(obj, UserObjectValue):
        return Const(user_len(frame, obj))
    raise frame.unsupported(f"len() of a {obj.kind()}")


@builtin(range)
def _range(frame: Frame, target, args, kwargs):
    if not kwargs and not any(isinstance(a, ComputedNumberValue) for a in args):
        # (a bound only the graph's run knows is read here, at the call: a break at range(),
        # where the frame can resume, not at the loop's GET_ITER)
        lazy = lazy_range(frame, args)  # iterated by a for statement next: maybe one loop node
        if lazy is not None:
            return lazy
    return _apply(range, *_consts(frame, args, "range"))


@builtin(enumerate, keywords=("start",))
def _enumerate(frame: Frame, target, args, kwargs):
    if not args or len(args) + len(kwargs) > 2:
        if kwargs.keys() - {"start"}:
            raise frame.unsupported("enumerate() with its iterable given by keyword")
        # a wrong argument count: Python's own error (it names only counts)
        _apply_raw(enumerate, *[()] * len(args), **dict.fromkeys(kwargs, 0))
    start = args[1] if len(args) > 1 else kwargs.get("start", Const(0))
    if not (isinstance(start, Const) and type(start.value) is int):
        raise frame.unsupported("enumerate() with a start that is not a Python int")
    if is_lazy(args[0]):
        return lazy_enumerate(frame, args[0], start, args)

    def iterator() -> IteratorValue:
        return IteratorValue(
            mode="enumerate", inner=[get_iter(frame, args[0])], count=start.value,
            python_type=enumerate,
        )

    def counted(frame: Frame, index: Value, rows: list[Value]) -> Value:
        count = index if start.value == 0 else binary_op(frame, "+", index, start)
        return TupleValue([count, rows[0]])

    lazy = None
    if isinstance(args[0], ArrayValue):  # rows iterated by a for statement next: maybe one node
        lazy = lazy_rows(frame, args[:1], iterated_next(frame, True), counted, iterator)
    return iterator() if lazy is None else lazy


@builtin(np.ndindex)
def _ndindex(frame: Frame, target, args, kwargs):
    """``np.ndindex(shape)`` of a shape known now: the index tuples of Python ints it yields,
    as a snapshot (a loop over it then unrolls, or breaks before unrolling when too long)."""
    dims = args[0].items if len(args) == 1 and isinstance(args[0], TupleValue) else args
    shape = _consts(frame, list(dims), "np.ndindex")
    if not all(type(n) is int for n in shape):
        raise frame.unsupported("np.ndindex() of a shape that is not Python ints")
    count = math.prod(max(n, 0) for n in shape)
    plain = _apply_raw(np.ndindex, *shape)  # NumPy's own errors (a negative size)

    def snapshot() -> IteratorValue:
        check_item_count(frame, count, "iterating over an np.ndindex")
        return IteratorValue(items=[constant_value(index) for index in plain],
                             python_type=np.ndindex)

    lazy = lazy_ndindex(frame, count, _unravel(shape), snapshot) if shape and count else None
    return snapshot() if lazy is None else lazy  # a for statement's next: maybe one loop node


def _unravel(shape: list[int]):
    """The index tuple ``np.ndindex(*shape)`` yields at flat position ``i`` (C order), as
    Python computes it from ``i``: ``(i // s0, i // s1 % n1, ..., i % nk)``."""
    strides = [math.prod(shape[k + 1:]) for k in range(len(shape))]

    def unravel(frame: Frame, index):
        items = []
        for k, (n, stride) in enumerate(zip(shape, strides)):
            item = index if stride == 1 else binary_op(frame, "//", index, Const(stride))
            items.append(binary_op(frame, "%", item, Const(n)) if k else item)
        return TupleValue(items)

    return unravel


@builtin(operator.is_, operator.is_not)
def _is(frame: Frame, target, args, kwargs):
    """``operator.is_(a, b)``: the ``is`` operator's own model (a computed string is not a
    constant of the code, whatever its value)."""
    if len(args) != 2:
        _apply_raw(target, *[None] * len(args))  # Python's error for the argument count
    same = same_object(frame, args[0], args[1])
    return Const(same if target is operator.is_ else not same)


@builtin(zip, keywords=("strict",))
def _zip(frame: Frame, target, args, kwargs):
    if any(is_lazy(a) for a in args):
        if kwargs:
            raise frame.unsupported("zip() of a generator with keyword arguments")
        return lazy_zip(frame, [get_iter(frame, a) for a in args], args)
    strict = truthiness(frame, kwargs["strict"]) if "strict" in kwargs else False

    def iterator() -> IteratorValue:
        return IteratorValue(
            mode="zip", inner=[get_iter(frame, a) for a in args], origin=strict, python_type=zip
        )

    # rows of arrays iterated by a for statement next: maybe one loop node (``row_loops``)
    lazy = None
    if args and not strict and all(isinstance(a, ArrayValue) for a in args):
        lazy = lazy_rows(frame, args, iterated_next(frame, True), row_tuple, iterator)
    return iterator() if lazy is None else lazy


@builtin(reversed)
def _reversed(frame: Frame, target, args, kwargs):
    if is_lazy(args[0]):
        raise UserCodeRaises(TypeError(f"'{args[0].kind()}' object is not reversible"))
    (seq,) = args
    if isinstance(seq, ListValue):
        return IteratorValue(
            live=seq, mode="reversed_list", count=seq.length() - 1,
            python_type=type(reversed([])),
        )
    if isinstance(seq, Const) and isinstance(seq.value, range):
        return get_iter(frame, Const(seq.value[::-1]))
    if isinstance(seq, (TupleValue, DictValue, DictViewValue)) or (
        isinstance(seq, Const) and isinstance(seq.value, (tuple, str, bytes))
    ):
        it = get_iter(frame, seq)
        it.items.reverse()
        it.python_type = type(_apply_raw(reversed, _example(frame, seq)))
        return it
    raise frame.unsupported(f"reversed() of a {seq.kind()}")


@builtin(iter)
def _iter(frame: Frame, target, args, kwargs):
    return get_iter(frame, args[0])


@builtin(next)
def _next(frame: Frame, target, args, kwargs):
    it = args[0]
    if not isinstance(it, IteratorValue) and not is_lazy(it):
        raise frame.unsupported("next() of something that is not a tracked iterator")
    item = next_item(it)
    if item is None:
        if len(args) > 1:
            return args[1]
        raise UserCodeRaises(StopIteration())
    return item


SEQUENCE_KINDS = {tuple: TupleValue, list: ListValue, set: SetValue}


@builtin(tuple, list, set)
def _sequence(frame: Frame, target, args, kwargs):
    if target is tuple and args and isinstance(args[0], TupleValue):
        return args[0]  # CPython returns an exact tuple itself
    items = items_of(frame, args[0]) if args else []
    if target is set:
        return new_set(frame, items)
    return SEQUENCE_KINDS[target](items)


@builtin(dict, keywords=None)
def _dict(frame: Frame, target, args, kwargs):
    result: dict = {}
    if args:
        src = args[0]
        if isinstance(src, DictValue):
            result.update(src.items)
        else:
            for pair in items_of(frame, src):
                k, v = items_of(frame, pair)
                result[const_key(frame, k)] = v
    result.update(kwargs)
    return DictValue(result)


def _number_fold(frame: Frame, name: str, fn, args: list[Value], kwargs):
    """``min``/``max``: the winning item itself (its identity is kept), found by the same
    comparisons Python makes."""
    items = items_of(frame, args[0]) if len(args) == 1 else list(args)
    if any(isinstance(a, (ArrayValue, MixedScalarValue)) for a in items):
        if not kwargs:
            chosen = (_scalar_fold(frame, name, items) or _assumed_winner(frame, name, fn, items)
                      or mixed_fold(frame, name, items))
            if chosen is not None:
                return chosen
        raise frame.unsupported(
            f"{name}() compares arrays element by element in Python",
            f"use np.{'maximum' if name == 'max' else 'minimum'} or np.{name}",
        )
    values = _plain_consts(frame, items, name)
    if not items or (len(args) != 1 and kwargs):
        # an empty iterable, or a default with several arguments: Python's own answer or error
        if len(args) == 1 and "default" in kwargs:
            return kwargs["default"]
        plain_kwargs = dict(zip(kwargs, _consts(frame, list(kwargs.values()), name)))
        _apply_raw(fn, *([values] if len(args) == 1 else values), **plain_kwargs)
        raise frame.unsupported(f"{name}() with these arguments")
    return items[_apply_raw(fn, range(len(values)), key=values.__getitem__)]


def _scalar_fold(frame: Frame, name: str, items: list[Value]) -> Value | None:
    """``max(a, b, ...)`` of real NumPy scalars of the graph, all of one dtype: the winner has
    that type whatever the data, so the graph keeps Python's running choice (an item replaces
    the winner only when it compares greater, which nan never does) as ``where``s. None where
    this does not apply."""
    if not all(isinstance(item, ArrayValue) for item in items):
        return None
    metas = [item.meta for item in items]
    if not (metas and all(m.scalar and m.dtype == metas[0].dtype for m in metas)
            and metas[0].dtype.kind in "biuf"):
        return None
    beats = ops.REGISTRY["greater" if name == "max" else "less"]
    winner = items[0]
    for item in items[1:]:
        test = op_call(frame, beats, (item, winner), {})
        picked = op_call(frame, ops.REGISTRY["where"], (test, item, winner), {})
        winner = op_call(frame, ops.REGISTRY["getitem"], (picked, ()), {})  # a NumPy scalar
    return winner


def _assumed_winner(frame: Frame, name: str, fn, items: list[Value]) -> Value | None:
    """``max(1.0, m)`` of one float NumPy scalar ``m`` of the graph and Python numbers: ``m``,
    checked at run time (``ops.speculation``). Which item wins decides the result's type (the
    float ``1.0`` or ``m``), so the graph assumes ``m`` does, through the comparisons Python
    makes: ``m > <the winner before it>`` and ``not (c > m)`` for each later ``c``. None where
    this does not apply (the caller breaks)."""
    graph = [i for i, item in enumerate(items) if isinstance(item, ArrayValue)]
    if len(graph) != 1:
        return None
    k = graph[0]
    value = items[k]
    if not (value.meta.scalar and value.meta.dtype.kind == "f"):
        return None
    others = [item for item in items if item is not value]
    if any(isinstance(c, ScalarInputValue) and c.source is None for c in others):
        return None  # a number the graph computes (a loop's): no value to compare with here
    if not all(isinstance(c, Const) and type(c.value) in (int, float) for c in others):
        return None
    consts = _plain_consts(frame, others, name)
    try:  # compared in the scalar's dtype: only constants it holds exactly
        if not all(value.meta.dtype.type(c) == c for c in consts):
            return None
    except OverflowError:  # an int beyond every float
        return None
    beats = ops.REGISTRY["greater" if name == "max" else "less"]
    tests = [op_call(frame, beats, (value, fn(consts[:k])), {})] if k else []
    for c in consts[k:]:
        tests.append(op_call(frame, ops.REGISTRY["logical_not"],
                             (op_call(frame, beats, (c, value), {}),), {}))
    holds = tests[0]
    for test in tests[1:]:
        holds = op_call(frame, ops.REGISTRY["logical_and"], (holds, test), {})
    otherwise = fn(consts)  # Python's result when the graph value does not win
    kept = type(otherwise) is float and not any(c != c for c in consts)
    return op_call(frame, ops.REGISTRY["chosen"], (holds, value),
                   {"otherwise": otherwise} if kept else {})


def _plain_consts(frame: Frame, items: list[Value], what: str) -> list:
    """The plain values of ``items``, which must be builtin constants: comparing any other
    object could run a user-defined method."""
    values = _consts(frame, items, what)
    if not all(is_constant(v) for v in values):
        raise frame.unsupported(f"{what}() of objects that may define their own comparisons")
    return values


@builtin(min, keywords=("default",))
def _min(frame: Frame, target, args, kwargs):
    return _number_fold(frame, "min", min, args, kwargs)


@builtin(max, keywords=("default",))
def _max(frame: Frame, target, args, kwargs):
    return _number_fold(frame, "max", max, args, kwargs)


@builtin(abs)
def _abs(frame: Frame, target, args, kwargs):
    (x,) = args
    if isinstance(x, (ArrayValue, MixedScalarValue)):
        return unary_op(frame, "abs", x)
    return _apply(abs, *_consts(frame, args, "abs"))


@builtin(sum, keywords=("start",))
def _sum(frame: Frame, target, args, kwargs):
    start = args[1] if len(args) > 1 else kwargs.get("start", Const(0))
    total = start
    for item in items_of(frame, args[0]):
        total = binary_op(frame, "+", total, item)
    return total


@builtin(int, float, bool, complex, str, keywords=None)
def _convert(frame: Frame, target, args, kwargs):
    if (target in (float, int) and len(args) == 1 and not kwargs
            and isinstance(args[0], ArrayValue)):
        number = graph_number(frame, target, args[0])
        if number is not None:
            return number
    if any(isinstance(a, ArrayValue) for a in args):
        raise frame.unsupported(
            f"{target.__name__}() of a graph value needs its data in Python",
            "keep the value as an array, or accept a graph break here",
            kind="graph_value_to_python",
        )
    if target is bool and args and not kwargs:
        return Const(truthiness(frame, args[0]))
    return _plain(frame, target, args, kwargs)


@builtin(math.sqrt)
def _math_sqrt(frame: Frame, target, args, kwargs):
    """``math.sqrt(x)`` of a 0-d graph array, a NumPy scalar of the graph or a Python number the
    graph computes: a Python float the graph computes (``ops.scalar_ops.PY_SQRT``), raising
    Python's ValueError for a negative value when it runs. Constants fold as Python does."""
    if len(args) == 1 and isinstance(args[0], (ArrayValue, ScalarInputValue)) \
            and not frame.ctx.differentiating:
        x = args[0]
        meta = x.meta if isinstance(x, ArrayValue) else x.node.meta["val"]
        try:
            PY_SQRT.infer(meta)
        except ops.UnsupportedArguments as exc:
            raise frame.unsupported(f"math.sqrt of a {x.kind()}: {exc}") from exc
        if isinstance(x, ScalarInputValue) and not isinstance(x, ComputedNumberValue):
            # a dynamic Python number from outside: its value now gives the result's value
            try:
                value = math.sqrt(x._value)
            except (ValueError, TypeError):
                return _plain(frame, target, args, kwargs)  # reads it (a guard), raises
            node = frame.ctx.call_op(PY_SQRT, (x,), {}).node
            return ScalarInputValue(value, None, lambda: x.value, node)
        node = frame.ctx.call_op(PY_SQRT, (x,), {}).node
        ctx = frame.ctx

        def refuse():
            return ctx.unsupported(
                "the Python float made by math.sqrt of a graph value is used where Python "
                "needs its value, which only the graph's run knows",
                "keep computing with it (arithmetic stays in the graph), or accept a graph "
                "break here", kind="graph_value_to_python")

        return ComputedNumberValue(1.0, node, refuse)
    return _plain(frame, target, args, kwargs)


@builtin(round, divmod, pow, hash, chr, ord, slice, keywords=None)
def _plain(frame: Frame, target, args, kwargs):
    names = list(kwargs)
    values = _consts(frame, [*args, *kwargs.values()], target.__name__)
    positional = values[: len(args)]
    return _apply(target, *positional, **dict(zip(names, values[len(args) :])))


@builtin(id)
def _id(frame: Frame, target, args, kwargs):
    if len(args) != 1:
        _apply(id, *args)  # raises CPython's own TypeError for the count
    return Const(object_id(frame, args[0]))


@builtin(isinstance)
def _isinstance(frame: Frame, target, args, kwargs):
    obj, classes = args
    if not isinstance(classes, (Const, TupleValue)):
        raise frame.unsupported("isinstance() with a class that is not a constant")
    klass = classes.value if isinstance(classes, Const) else tuple(c.value for c in classes.items)
    return Const(isinstance(_example(frame, obj), klass))


@builtin(type)
def _type(frame: Frame, target, args, kwargs):
    if len(args) != 1:
        raise frame.unsupported("type() with three arguments")
    return Const(type(_example(frame, args[0])))


def _example(frame: Frame, obj: Value) -> object:
    """An object of the same Python type as ``obj`` (for isinstance / type)."""
    if isinstance(obj, ArrayValue):
        meta = obj.meta
        return meta.dtype.type(0) if meta.scalar else np.empty((0,), meta.dtype)
    if isinstance(obj, ComputedNumberValue):
        return obj._value  # of the number's exact type: its value is only the run's
    if isinstance(obj, Const):
        return obj.value
    if isinstance(obj, UserObjectValue):
        return obj.obj
    kinds = {TupleValue: (), ListValue: [], DictValue: {}, SetValue: set()}
    if type(obj) in kinds:
        return kinds[type(obj)]
    if isinstance(obj, DictViewValue):
        return getattr({}, obj.which)()
    if isinstance(obj, IteratorValue) and obj.python_type is not None:
        return _example_iterator(frame, obj.python_type)
    if isinstance(obj, FunctionValue):
        return obj.fn if obj.fn is not None else (lambda: None)
    raise frame.unsupported(f"isinstance()/type() of a {obj.kind()}")


def _example_iterator(frame: Frame, kind: type):
    for candidate in (iter([]), iter(()), iter(range(0)), enumerate(()), zip(), reversed([]),
                      reversed(()), iter({}), iter({}.values()), iter({}.items()), iter(set()),
                      iter(""), iter(b"")):
        if type(candidate) is kind:
            return candidate
    raise frame.unsupported(f"isinstance()/type() of a {kind.__name__}")


@builtin(all, any)
def _all_any(frame: Frame, target, args, kwargs):
    items = each(args[0]) if is_lazy(args[0]) else items_of(frame, args[0])
    # lazily: like CPython, no item after the deciding one is computed
    return Const(target(truthiness(frame, v) for v in items))


@builtin(getattr)
def _getattr(frame: Frame, target, args, kwargs):
    name = _consts(frame, [args[1]], "getattr")[0]
    if len(args) > 2:
        try:
            return get_attr(frame, args[0], name)
        except UserCodeRaises as exc:
            return _missing(exc, args[2])
    return get_attr(frame, args[0], name)


@builtin(hasattr)
def _hasattr(frame: Frame, target, args, kwargs):
    try:
        get_attr(frame, args[0], _consts(frame, [args[1]], "hasattr")[0])
        return Const(True)
    except UserCodeRaises as exc:
        return _missing(exc, Const(False))


def _missing(raised: UserCodeRaises, answer: Value) -> Value:
    """``answer`` where the lookup raised ``AttributeError`` (which ``get_attr`` raises only
    once the attribute's absence is guarded: ``absent_attributes``); any other exception
    propagates, as in Python."""
    if not isinstance(raised.error, AttributeError):
        raise raised
    return answer


@builtin(builtins.print, builtins.input, builtins.open)
def _io(frame: Frame, target, args, kwargs):
    raise frame.unsupported(
        f"{target.__name__}() does input/output, which a graph cannot hold",
        "move it outside the compiled function, or accept a graph break here",
        kind="io",
    )


def _graph_break(frame: Frame, target, args, kwargs):
    raise frame.unsupported(
        "npdynamo.graph_break() was called", "remove the call to fuse more", kind="explicit"
    )


def register_graph_break(fn) -> None:
    BUILTINS[fn] = _graph_break


def graph_break() -> None:
    """An explicit graph break: compiled code stops here and Python runs (a no-op in Python)."""


register_graph_break(graph_break)


@builtin(sys.getrecursionlimit, sys.setrecursionlimit, keywords=None)
def _recursion_limit(frame: Frame, target, args, kwargs):
    """Code that reads or sets the recursion limit measures it against the depth it runs at: a
    break, and the frame runs on natively from here, at one depth, with no hand-over to a resume
    function (called a few frames deeper than the frame it continues) between its calls."""
    error = frame.unsupported(
        f"call to sys.{target.__name__}: the recursion limit is measured against the depth the "
        "code runs at, so the rest of the function runs in Python",
        "read or set the recursion limit outside the compiled function",
    )
    error.runs_on_natively = True
    raise error


@builtin(sorted, keywords=("reverse",))
def _sorted(frame: Frame, target, args, kwargs):
    """A new list of the same items (identity kept), ordered by Python's own sort."""
    items = items_of(frame, args[0])
    reverse = kwargs.get("reverse", Const(False))
    if not isinstance(reverse, Const):
        raise frame.unsupported("sorted() with a reverse flag that is a graph value")
    values = _plain_consts(frame, items, "sorted")
    order = _apply_raw(sorted, range(len(values)), key=values.__getitem__, reverse=reverse.value)
    return ListValue([items[i] for i in order])


def _apply_raw(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        raise python_raised(exc)  # noqa: B904 - the cause is set (or exc is re-raised)
