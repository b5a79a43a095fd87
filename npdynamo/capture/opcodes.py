"""The opcode-handler table: one handler per CPython instruction the translator understands.

Handlers are registered with the Python versions they apply to (``@handler("NAME", since=...,
until=...)``); where an opcode's stack layout differs by version, the difference sits in the
handler or in the three layout helpers below it (NULL beside a global, method pairs, calls with
keyword names), so the rest of the translator sees one canonical call. An opcode with no handler
for the running version is an unsupported construct (a graph break), never a crash.
"""

from __future__ import annotations

import operator
import sys

import bytecode as bc

from npdynamo import ops
from npdynamo.capture.calls import call_value, get_attr, load_method, op_call, raw
from npdynamo.capture.containers import (
    const_key,
    extend_list,
    get_iter,
    items_of,
    record,
    store_subscript,
    subscript,
    truthiness,
)
from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.guards import GlobalSource
from npdynamo.capture.side_effects import cast_for_inplace, write_array
from npdynamo.capture.values import (
    DELETED,
    NULL,
    ArrayValue,
    CellValue,
    ComprehensionSave,
    Const,
    DictValue,
    ExternalCell,
    FunctionValue,
    IteratorValue,
    ListValue,
    NullValue,
    SetValue,
    TupleValue,
    UserObjectValue,
    Value,
)

HANDLERS: dict = {}
PY = sys.version_info[:2]


def handler(*names: str, since=(3, 11), until=(3, 13)):
    """Register a handler for ``names`` if the running Python is in [since, until]."""

    def register(fn):
        if since <= PY <= until:
            for name in names:
                HANDLERS[name] = fn
        return fn

    return register


# -- layout helpers (the per-version stack shapes of calls) ----------------------------------
def push_with_null(frame, value: Value) -> None:
    """LOAD_GLOBAL/LOAD_ATTR with the NULL bit: NULL below the value until 3.12, above from 3.13."""
    if PY >= (3, 13):
        frame.push(value)
        frame.push(NULL)
    else:
        frame.push(NULL)
        frame.push(value)


def push_method(frame, method: Value, self_value: Value) -> None:
    """A method-form attribute load: (method, self), or the plain attribute with a NULL."""
    if isinstance(method, NullValue):
        push_with_null(frame, self_value)
    else:
        frame.push(method)
        frame.push(self_value)


def pop_callable(frame) -> tuple[Value, list[Value]]:
    """The two slots under a call's arguments -> (callable, [self] or [])."""
    top = frame.pop()
    below = frame.pop()
    if isinstance(below, NullValue):  # 3.11/3.12: NULL, callable
        return top, []
    if isinstance(top, NullValue):  # 3.13: callable, NULL
        return below, []
    return below, [top]  # method pair: method, self


def do_call(frame, nargs: int, kw_names: tuple[str, ...]) -> None:
    args = frame.popn(nargs)
    fn, self_args = pop_callable(frame)
    nkw = len(kw_names)
    kwargs = dict(zip(kw_names, args[len(args) - nkw :])) if nkw else {}
    positional = self_args + args[: len(args) - nkw]
    frame.push(call_value(frame, fn, positional, kwargs))


# -- no-ops and stack shuffling --------------------------------------------------------------
@handler("NOP", "RESUME", "PRECALL", "COPY_FREE_VARS", "EXTENDED_ARG", "CACHE")
def _nop(frame, ins):
    pass


@handler("POP_TOP")
def _pop_top(frame, ins):
    frame.pop()


@handler("PUSH_NULL")
def _push_null(frame, ins):
    frame.push(NULL)


@handler("COPY")
def _copy(frame, ins):
    frame.push(frame.stack[-ins.arg])


@handler("SWAP")
def _swap(frame, ins):
    s = frame.stack
    s[-1], s[-ins.arg] = s[-ins.arg], s[-1]


# -- loads and stores ------------------------------------------------------------------------
@handler("LOAD_CONST")
def _load_const(frame, ins):
    from npdynamo.capture.builder import constant_value

    frame.push(constant_value(ins.arg))


def _load_fast(frame, name):
    if isinstance(name, (bc.CellVar, bc.FreeVar)):  # 3.13 spells LOAD_CLOSURE this way
        frame.push(frame.cells[name.name])
        return
    if name not in frame.locals:
        raise UserCodeRaises(
            UnboundLocalError(
                f"cannot access local variable '{name}' where it is not associated with a value"
            )
        )
    frame.push(frame.locals[name])


@handler("LOAD_FAST", "LOAD_FAST_CHECK")
def _load_fast_h(frame, ins):
    _load_fast(frame, ins.arg)


@handler("LOAD_FAST_AND_CLEAR", since=(3, 12))
def _load_fast_and_clear(frame, ins):
    # comprehensions inlined by PEP 709 save the outer binding (or NULL when unbound)
    frame.push(ComprehensionSave(frame.locals.pop(ins.arg, NULL)))


@handler("LOAD_FAST_LOAD_FAST", since=(3, 13))
def _load_fast_load_fast(frame, ins):
    for name in ins.arg:
        _load_fast(frame, name)


@handler("STORE_FAST")
def _store_fast(frame, ins):
    value = frame.pop()
    if isinstance(value, ComprehensionSave):
        value = value.saved
    if isinstance(value, NullValue):
        frame.locals.pop(ins.arg, None)
    else:
        frame.locals[ins.arg] = value


@handler("STORE_FAST_LOAD_FAST", since=(3, 13))
def _store_fast_load_fast(frame, ins):
    store, load = ins.arg
    frame.locals[store] = frame.pop()
    _load_fast(frame, load)


@handler("STORE_FAST_STORE_FAST", since=(3, 13))
def _store_fast_store_fast(frame, ins):
    first, second = ins.arg
    frame.locals[first] = frame.pop()
    frame.locals[second] = frame.pop()


@handler("DELETE_FAST")
def _delete_fast(frame, ins):
    frame.locals.pop(ins.arg, None)


@handler("LOAD_GLOBAL")
def _load_global(frame, ins):
    push_null, name = ins.arg
    frame.push_null_for_global = push_null
    value = _global_value(frame, name)
    if push_null:
        push_with_null(frame, value)
    else:
        frame.push(value)


def _global_value(frame, name: str) -> Value:
    import builtins

    ctx = frame.ctx
    if frame.globals is ctx.fn.__globals__ and name in ctx.side_effects.global_stores:
        return ctx.side_effects.global_stores[name]
    if name in frame.globals:
        if frame.globals is ctx.fn.__globals__:
            return ctx.builder.wrap(frame.globals[name], GlobalSource(name))
        from npdynamo.capture.guards import AttrSource, ItemSource

        # a global of an inlined function from another module: read through that function
        src = frame.func.source
        source = ItemSource(AttrSource(src, "__globals__"), name) if src is not None else None
        return ctx.builder.wrap(frame.globals[name], source)
    if hasattr(builtins, name):
        return Const(getattr(builtins, name))
    raise UserCodeRaises(NameError(f"name '{name}' is not defined"))


@handler("STORE_GLOBAL")
def _store_global(frame, ins):
    if frame.globals is not frame.ctx.fn.__globals__:
        raise frame.unsupported(
            f"assigning the global {ins.arg!r} of another module", kind="side_effect"
        )
    frame.ctx.side_effects.global_stores[ins.arg] = frame.pop()


@handler("DELETE_GLOBAL")
def _delete_global(frame, ins):
    raise frame.unsupported(f"del of the global {ins.arg!r}", kind="side_effect")


@handler("LOAD_DEREF")
def _load_deref(frame, ins):
    frame.push(frame.load_cell(ins.arg.name))


@handler("LOAD_CLOSURE", until=(3, 12))
def _load_closure(frame, ins):
    frame.push(frame.cells[ins.arg.name])


@handler("STORE_DEREF")
def _store_deref(frame, ins):
    cell = frame.cells.get(ins.arg.name)
    value = frame.pop()
    if isinstance(cell, ExternalCell):
        # a cell of a function outside the capture (nonlocal): written back after the graph
        if cell.source is None:
            raise frame.unsupported(
                f"assigning the closure variable {ins.arg.name!r}", kind="side_effect"
            )
        cell.contents = value
        frame.ctx.side_effects.record("cell_set", None, cell.source.expr(), value)
        return
    cell.contents = value


@handler("MAKE_CELL")
def _make_cell(frame, ins):
    name = ins.arg.name
    frame.cells[name] = CellValue(frame.locals.pop(name, None), name)


# -- attributes ------------------------------------------------------------------------------
@handler("LOAD_ATTR", until=(3, 11))
def _load_attr_311(frame, ins):
    frame.push(get_attr(frame, frame.pop(), ins.arg))


@handler("LOAD_METHOD", until=(3, 11))
def _load_method_311(frame, ins):
    method, self_value = load_method(frame, frame.pop(), ins.arg)
    push_method(frame, method, self_value)


@handler("LOAD_ATTR", since=(3, 12))
def _load_attr_312(frame, ins):
    is_method, name = ins.arg
    obj = frame.pop()
    if is_method:
        method, self_value = load_method(frame, obj, name)
        push_method(frame, method, self_value)
    else:
        frame.push(get_attr(frame, obj, name))


@handler("STORE_ATTR")
def _store_attr(frame, ins):
    obj = frame.pop()
    value = frame.pop()
    _check_plain_attributes(frame, obj, ins.arg)
    obj.attrs[ins.arg] = value
    frame.ctx.side_effects.record("attr_set", obj, ins.arg, value)


@handler("DELETE_ATTR")
def _delete_attr(frame, ins):
    obj = frame.pop()
    _check_plain_attributes(frame, obj, ins.arg)
    if ins.arg not in obj.attrs and ins.arg not in getattr(obj.obj, "__dict__", {}):
        raise UserCodeRaises(AttributeError(ins.arg))
    obj.attrs[ins.arg] = DELETED
    frame.ctx.side_effects.record("attr_del", obj, ins.arg)


def _check_plain_attributes(frame, obj: Value, name: str) -> None:
    """Stores are replayed with setattr: only plain instance attributes of user objects."""
    from npdynamo.capture.calls import _class_attribute

    if not isinstance(obj, UserObjectValue) or obj.source is None:
        raise frame.unsupported(
            f"assigning the attribute .{name} of a {obj.kind()}", kind="side_effect"
        )
    klass = type(obj.obj)
    custom = klass.__setattr__ is not object.__setattr__ or klass.__delattr__ is not (
        object.__delattr__
    )
    descriptor = hasattr(_class_attribute(obj.obj, name), "__set__")
    if custom or descriptor or not hasattr(obj.obj, "__dict__"):
        raise frame.unsupported(
            f"assigning .{name}: {klass.__qualname__} customises attribute assignment",
            kind="side_effect",
        )


# -- operators -------------------------------------------------------------------------------
BINARY_SYMBOLS = {
    "ADD": "+",
    "SUBTRACT": "-",
    "MULTIPLY": "*",
    "TRUE_DIVIDE": "/",
    "FLOOR_DIVIDE": "//",
    "REMAINDER": "%",
    "POWER": "**",
    "MATRIX_MULTIPLY": "@",
    "AND": "&",
    "OR": "|",
    "XOR": "^",
    "LSHIFT": "<<",
    "RSHIFT": ">>",
}
PY_OPERATORS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "@": operator.matmul,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def binary_op(frame, symbol: str, left: Value, right: Value) -> Value:
    """``left <symbol> right`` with Python's semantics on tracked values."""
    if isinstance(left, ArrayValue) or isinstance(right, ArrayValue):
        for side in (left, right):
            if not isinstance(side, (ArrayValue, Const)):
                raise frame.unsupported(
                    f"array {symbol} {side.kind()} (convert the Python container with np.array "
                    "outside the compiled function)"
                )
        return op_call(frame, ops.BINARY_OPERATORS[symbol], (raw(left), raw(right)), {})
    if isinstance(left, Const) and isinstance(right, Const):
        try:
            return Const(PY_OPERATORS[symbol](left.value, right.value))
        except Exception as exc:
            raise UserCodeRaises(exc) from exc
    return _sequence_op(frame, symbol, left, right)


def _sequence_op(frame, symbol: str, left: Value, right: Value) -> Value:
    if symbol == "+" and type(left) is type(right) and isinstance(left, (TupleValue, ListValue)):
        return type(left)(left.items + right.items)
    if symbol == "*" and isinstance(left, (TupleValue, ListValue)) and isinstance(right, Const):
        return type(left)(left.items * right.value)
    if symbol == "*" and isinstance(right, (TupleValue, ListValue)) and isinstance(left, Const):
        return type(right)(right.items * left.value)
    if symbol in ("==", "!=") and not isinstance(left, ArrayValue):
        same = _structural_equal(frame, left, right)
        return Const(same if symbol == "==" else not same)
    raise frame.unsupported(f"the operator {symbol} on {left.kind()} and {right.kind()}")


def _structural_equal(frame, a: Value, b: Value) -> bool:
    if isinstance(a, Const) and isinstance(b, Const):
        return bool(a.value == b.value)
    if isinstance(a, (TupleValue, ListValue)) and type(a) is type(b):
        return len(a.items) == len(b.items) and all(
            _structural_equal(frame, x, y) for x, y in zip(a.items, b.items)
        )
    if isinstance(a, Const) and isinstance(b, TupleValue) and isinstance(a.value, tuple):
        return _structural_equal(frame, TupleValue([Const(v) for v in a.value]), b)
    if isinstance(b, Const) and isinstance(a, TupleValue):
        return _structural_equal(frame, b, a)
    if type(a) is not type(b):
        return False
    raise frame.unsupported(f"comparing two {a.kind()} values")


def inplace_op(frame, symbol: str, target: Value, other: Value) -> Value:
    """``target <symbol>= other``: arrays and lists change in place, numbers rebind."""
    if isinstance(target, ArrayValue):
        result = binary_op(frame, symbol, target, other)
        write_array(frame.ctx, target, cast_for_inplace(frame.ctx, result, target))
        return target
    if isinstance(target, ListValue) and symbol == "+":
        extend_list(frame, target, items_of(frame, other))
        return target
    return binary_op(frame, symbol, target, other)


@handler("BINARY_OP")
def _binary_op(frame, ins):
    right = frame.pop()
    left = frame.pop()
    name = ins.arg.name
    if name.startswith("INPLACE_"):
        frame.push(inplace_op(frame, BINARY_SYMBOLS[name[len("INPLACE_") :]], left, right))
    else:
        frame.push(binary_op(frame, BINARY_SYMBOLS[name], left, right))


COMPARE_SYMBOLS = {"LT": "<", "LE": "<=", "EQ": "==", "NE": "!=", "GT": ">", "GE": ">="}


@handler("COMPARE_OP")
def _compare_op(frame, ins):
    right = frame.pop()
    left = frame.pop()
    # 3.13 adds *_CAST forms that also convert the result to bool (same comparison)
    symbol = COMPARE_SYMBOLS[ins.arg.name.removesuffix("_CAST")]
    result = binary_op(frame, symbol, left, right)
    if ins.arg.name.endswith("_CAST"):
        # 3.13 converts to an exact bool here, for the conditional jump that follows
        result = Const(truthiness(frame, result))
    frame.push(result)


def unary_op(frame, symbol: str, value: Value) -> Value:
    if isinstance(value, ArrayValue):
        return op_call(frame, ops.UNARY_OPERATORS[symbol], (value,), {})
    if isinstance(value, Const):
        fn = {"-": operator.neg, "+": operator.pos, "~": operator.invert}[symbol]
        try:
            return Const(fn(value.value))
        except Exception as exc:
            raise UserCodeRaises(exc) from exc
    raise frame.unsupported(f"unary {symbol} on a {value.kind()}")


@handler("UNARY_NEGATIVE")
def _unary_negative(frame, ins):
    frame.push(unary_op(frame, "-", frame.pop()))


@handler("UNARY_INVERT")
def _unary_invert(frame, ins):
    frame.push(unary_op(frame, "~", frame.pop()))


@handler("UNARY_POSITIVE", until=(3, 11))
def _unary_positive(frame, ins):
    frame.push(unary_op(frame, "+", frame.pop()))


@handler("CALL_INTRINSIC_1", since=(3, 12))
def _call_intrinsic_1(frame, ins):
    name = ins.arg.name
    if name == "INTRINSIC_UNARY_POSITIVE":
        frame.push(unary_op(frame, "+", frame.pop()))
    elif name == "INTRINSIC_LIST_TO_TUPLE":
        frame.push(TupleValue(list(frame.pop().items)))
    else:
        raise frame.unsupported(f"the Python construct behind {name} is not supported")


@handler("UNARY_NOT")
def _unary_not(frame, ins):
    frame.push(Const(not truthiness(frame, frame.pop())))


@handler("TO_BOOL", since=(3, 13))
def _to_bool(frame, ins):
    frame.push(Const(truthiness(frame, frame.pop())))


@handler("IS_OP")
def _is_op(frame, ins):
    right = frame.pop()
    left = frame.pop()
    if isinstance(left, Const) and isinstance(right, Const):
        same = left.value is right.value
    else:
        same = left is right
    frame.push(Const(same != bool(ins.arg)))


@handler("CONTAINS_OP")
def _contains_op(frame, ins):
    container = frame.pop()
    item = frame.pop()
    if isinstance(container, DictValue):
        found = const_key(frame, item) in container.items
    elif isinstance(container, Const) and isinstance(item, Const):
        try:
            found = item.value in container.value
        except Exception as exc:
            raise UserCodeRaises(exc) from exc
    else:
        members = items_of(frame, container)
        if not isinstance(item, Const) or not all(isinstance(m, Const) for m in members):
            raise frame.unsupported("`in` on values that are not Python constants")
        found = item.value in [m.value for m in members]
    frame.push(Const(found != bool(ins.arg)))


# -- subscripts and slices -------------------------------------------------------------------
def index_value(frame, index: Value):
    """A tracked index as the plain index object ``ops.getitem`` takes (arrays stay tracked)."""
    if isinstance(index, (Const, ArrayValue)):
        return raw(index)
    if isinstance(index, TupleValue):
        return tuple(index_value(frame, v) for v in index.items)
    if isinstance(index, ListValue):
        raise frame.unsupported(
            "indexing an array with a Python list", "index with a tuple or an integer array"
        )
    raise frame.unsupported(f"an array index that is a {index.kind()}")


def get_item(frame, container: Value, index: Value) -> Value:
    if isinstance(container, ArrayValue):
        return op_call(frame, ops.REGISTRY["getitem"], (container, index_value(frame, index)), {})
    return subscript(frame, container, index)


@handler("BINARY_SUBSCR")
def _binary_subscr(frame, ins):
    index = frame.pop()
    container = frame.pop()
    frame.push(get_item(frame, container, index))


def make_slice(frame, parts: list[Value]) -> Value:
    if not all(isinstance(p, Const) for p in parts):
        raise frame.unsupported("a slice bound that is a graph value")
    return Const(slice(*(p.value for p in parts)))


@handler("BUILD_SLICE")
def _build_slice(frame, ins):
    frame.push(make_slice(frame, frame.popn(ins.arg)))


@handler("BINARY_SLICE", since=(3, 12))
def _binary_slice(frame, ins):
    stop = frame.pop()
    start = frame.pop()
    container = frame.pop()
    frame.push(get_item(frame, container, make_slice(frame, [start, stop])))


def set_item(frame, container: Value, index: Value, value: Value) -> None:
    if isinstance(container, ArrayValue):
        new = op_call(
            frame, ops.REGISTRY["setitem"], (container, index_value(frame, index), raw(value)), {}
        )
        write_array(frame.ctx, container, new)
        return
    store_subscript(frame, container, index, value)


@handler("STORE_SUBSCR")
def _store_subscr(frame, ins):
    index = frame.pop()
    container = frame.pop()
    value = frame.pop()
    set_item(frame, container, index, value)


@handler("STORE_SLICE", since=(3, 12))
def _store_slice(frame, ins):
    stop = frame.pop()
    start = frame.pop()
    container = frame.pop()
    value = frame.pop()
    set_item(frame, container, make_slice(frame, [start, stop]), value)


@handler("DELETE_SUBSCR")
def _delete_subscr(frame, ins):
    index = frame.pop()
    container = frame.pop()
    if isinstance(container, DictValue):
        key = const_key(frame, index)
        if key not in container.items:
            raise UserCodeRaises(KeyError(key))
        del container.items[key]
        record(frame, "dict_del", container, key)
    elif isinstance(container, ListValue) and isinstance(index, Const):
        try:
            del container.items[index.value]
        except IndexError as exc:
            raise UserCodeRaises(exc) from exc
        record(frame, "list_state", container)
    else:
        raise frame.unsupported(f"del on a {container.kind()}")


# -- building containers ---------------------------------------------------------------------
@handler("BUILD_TUPLE")
def _build_tuple(frame, ins):
    frame.push(TupleValue(frame.popn(ins.arg)))


@handler("BUILD_LIST")
def _build_list(frame, ins):
    frame.push(ListValue(frame.popn(ins.arg)))


@handler("BUILD_SET")
def _build_set(frame, ins):
    frame.push(SetValue(frame.popn(ins.arg)))


@handler("BUILD_MAP")
def _build_map(frame, ins):
    flat = frame.popn(2 * ins.arg)
    frame.push(DictValue({const_key(frame, k): v for k, v in zip(flat[::2], flat[1::2])}))


@handler("BUILD_CONST_KEY_MAP")
def _build_const_key_map(frame, ins):
    keys = frame.pop()
    values = frame.popn(ins.arg)
    frame.push(DictValue({const_key(frame, k): v for k, v in zip(items_of(frame, keys), values)}))


@handler("LIST_APPEND")
def _list_append(frame, ins):
    value = frame.pop()
    frame.stack[-ins.arg].items.append(value)


@handler("SET_ADD")
def _set_add(frame, ins):
    value = frame.pop()
    frame.stack[-ins.arg].items.append(value)


@handler("LIST_EXTEND")
def _list_extend(frame, ins):
    value = frame.pop()
    frame.stack[-ins.arg].items.extend(items_of(frame, value))


@handler("SET_UPDATE")
def _set_update(frame, ins):
    value = frame.pop()
    frame.stack[-ins.arg].items.extend(items_of(frame, value))


@handler("MAP_ADD")
def _map_add(frame, ins):
    value = frame.pop()
    key = frame.pop()
    frame.stack[-ins.arg].items[const_key(frame, key)] = value


@handler("DICT_UPDATE", "DICT_MERGE")
def _dict_update(frame, ins):
    other = frame.pop()
    if not isinstance(other, DictValue):
        raise frame.unsupported("** of something that is not a dict")
    target = frame.stack[-ins.arg]
    if ins.name == "DICT_MERGE":
        dup = set(target.items) & set(other.items)
        if dup:
            raise UserCodeRaises(
                TypeError(f"got multiple values for keyword argument '{dup.pop()}'")
            )
    target.items.update(other.items)


@handler("LIST_TO_TUPLE", until=(3, 11))
def _list_to_tuple(frame, ins):
    frame.push(TupleValue(list(frame.pop().items)))


@handler("UNPACK_SEQUENCE")
def _unpack_sequence(frame, ins):
    items = items_of(frame, frame.pop())
    if len(items) != ins.arg:
        few = len(items) < ins.arg
        raise UserCodeRaises(
            ValueError(
                f"not enough values to unpack (expected {ins.arg}, got {len(items)})"
                if few
                else f"too many values to unpack (expected {ins.arg})"
            )
        )
    for item in reversed(items):
        frame.push(item)


@handler("UNPACK_EX")
def _unpack_ex(frame, ins):
    before, after = ins.arg & 0xFF, ins.arg >> 8
    items = items_of(frame, frame.pop())
    if len(items) < before + after:
        raise UserCodeRaises(
            ValueError(
                "not enough values to unpack "
                f"(expected at least {before + after}, got {len(items)})"
            )
        )
    middle = ListValue(items[before : len(items) - after])
    for item in reversed(items[:before] + [middle] + items[len(items) - after :]):
        frame.push(item)


# -- strings ---------------------------------------------------------------------------------
def _format(frame, value: Value, spec: str = "", conversion=None) -> Const:
    if not isinstance(value, Const):
        raise frame.unsupported(
            "an f-string of a graph value needs its data in Python",
            "format values outside the compiled function",
            kind="graph_value_to_python",
        )
    v = value.value
    if conversion is not None:
        v = conversion(v)
    return Const(format(v, spec))


@handler("FORMAT_VALUE", until=(3, 12))
def _format_value(frame, ins):
    flags = ins.arg if isinstance(ins.arg, int) else 0
    spec = frame.pop().value if flags & 0x04 else ""
    conversion = {1: str, 2: repr, 3: ascii}.get(flags & 0x03)
    frame.push(_format(frame, frame.pop(), spec, conversion))


@handler("CONVERT_VALUE", since=(3, 13))
def _convert_value(frame, ins):
    conversion = {1: str, 2: repr, 3: ascii}[int(ins.arg)]
    value = frame.pop()
    if not isinstance(value, Const):
        raise frame.unsupported("an f-string of a graph value needs its data in Python")
    frame.push(Const(conversion(value.value)))


@handler("FORMAT_SIMPLE", since=(3, 13))
def _format_simple(frame, ins):
    frame.push(_format(frame, frame.pop()))


@handler("FORMAT_WITH_SPEC", since=(3, 13))
def _format_with_spec(frame, ins):
    spec = frame.pop()
    frame.push(_format(frame, frame.pop(), spec.value))


@handler("BUILD_STRING")
def _build_string(frame, ins):
    parts = frame.popn(ins.arg)
    frame.push(Const("".join(p.value for p in parts)))


# -- control flow ----------------------------------------------------------------------------
@handler("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT")
def _jump(frame, ins):
    frame.jump(ins.arg)


def _jump_if(frame, ins, when: bool):
    if truthiness(frame, frame.pop()) == when:
        frame.jump(ins.arg)


@handler("POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE")
def _pop_jump_if_true(frame, ins):
    _jump_if(frame, ins, True)


@handler("POP_JUMP_IF_FALSE", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE")
def _pop_jump_if_false(frame, ins):
    _jump_if(frame, ins, False)


def _is_none(value: Value) -> bool:
    return isinstance(value, Const) and value.value is None


@handler("POP_JUMP_IF_NONE", "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE")
def _pop_jump_if_none(frame, ins):
    if _is_none(frame.pop()):
        frame.jump(ins.arg)


@handler("POP_JUMP_IF_NOT_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE")
def _pop_jump_if_not_none(frame, ins):
    if not _is_none(frame.pop()):
        frame.jump(ins.arg)


@handler("JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP", until=(3, 11))
def _jump_or_pop(frame, ins):
    when = ins.name == "JUMP_IF_TRUE_OR_POP"
    if truthiness(frame, frame.stack[-1]) == when:
        frame.jump(ins.arg)
    else:
        frame.pop()


@handler("GET_ITER")
def _get_iter(frame, ins):
    frame.push(get_iter(frame, frame.pop()))


@handler("FOR_ITER")
def _for_iter(frame, ins):
    it = frame.stack[-1]
    if not isinstance(it, IteratorValue):
        raise frame.unsupported(f"a for loop over a {it.kind()}")
    item = it.next()
    if item is not None:
        frame.push(item)
        return
    if PY == (3, 11):
        frame.pop()
    else:
        # 3.12+: the loop exit runs END_FOR (3.13: END_FOR + POP_TOP), which pops the iterator
        # and a second slot; a placeholder keeps that cleanup balanced.
        frame.push(NULL)
    frame.jump(ins.arg)


@handler("END_FOR", since=(3, 12))
def _end_for(frame, ins):
    frame.pop()
    if PY == (3, 12):
        frame.pop()


@handler("RETURN_VALUE")
def _return_value(frame, ins):
    frame.return_value = frame.pop()


@handler("RETURN_CONST", since=(3, 12))
def _return_const(frame, ins):
    from npdynamo.capture.builder import constant_value

    frame.return_value = constant_value(ins.arg)


@handler("GET_LEN")
def _get_len(frame, ins):
    from npdynamo.capture.builtins_table import _len

    frame.push(_len(frame, [frame.stack[-1]], {}))


# -- calls and functions ---------------------------------------------------------------------
@handler("KW_NAMES", until=(3, 12))
def _kw_names(frame, ins):
    names = ins.arg
    frame.kw_names = names if isinstance(names, tuple) else tuple(frame.code.co_consts[names])


@handler("CALL", until=(3, 12))
def _call_312(frame, ins):
    names, frame.kw_names = frame.kw_names, ()
    do_call(frame, ins.arg, names)


@handler("CALL", since=(3, 13))
def _call_313(frame, ins):
    do_call(frame, ins.arg, ())


@handler("CALL_KW", since=(3, 13))
def _call_kw(frame, ins):
    names = frame.pop()
    do_call(frame, ins.arg, tuple(v.value for v in items_of(frame, names)))


@handler("CALL_FUNCTION_EX")
def _call_function_ex(frame, ins):
    kwargs = frame.pop() if ins.arg & 1 else DictValue({})
    args = frame.pop()
    fn, self_args = pop_callable(frame)
    if not isinstance(kwargs, DictValue):
        raise frame.unsupported("** of something that is not a dict")
    frame.push(call_value(frame, fn, self_args + items_of(frame, args), dict(kwargs.items)))


@handler("MAKE_FUNCTION", until=(3, 12))
def _make_function_312(frame, ins):
    code = frame.pop().value
    flags = ins.arg
    closure = tuple(frame.pop().items) if flags & 0x08 else ()
    if flags & 0x04:
        frame.pop()  # annotations do not change what the function computes
    kwdefaults = dict(frame.pop().items) if flags & 0x02 else {}
    defaults = tuple(frame.pop().items) if flags & 0x01 else ()
    frame.push(FunctionValue(code, frame.globals, code.co_name, defaults, kwdefaults, closure))


@handler("MAKE_FUNCTION", since=(3, 13))
def _make_function_313(frame, ins):
    code = frame.pop().value
    frame.push(FunctionValue(code, frame.globals, code.co_name))


@handler("SET_FUNCTION_ATTRIBUTE", since=(3, 13))
def _set_function_attribute(frame, ins):
    fn = frame.pop()
    value = frame.pop()
    flag = int(ins.arg)
    if flag == 0x08:
        fn.closure = tuple(value.items)
    elif flag == 0x02:
        fn.kwdefaults = dict(value.items)
    elif flag == 0x01:
        fn.defaults = tuple(value.items)
    frame.push(fn)


@handler("LOAD_ASSERTION_ERROR")
def _load_assertion_error(frame, ins):
    frame.push(Const(AssertionError))


@handler("RAISE_VARARGS")
def _raise(frame, ins):
    args = frame.popn(ins.arg)
    exc = args[0].value if args and isinstance(args[0], Const) else None
    if isinstance(exc, type) and issubclass(exc, BaseException):
        exc = exc()
    if isinstance(exc, BaseException):
        raise UserCodeRaises(exc)
    raise frame.unsupported("raise inside the compiled function")


__all__ = ["HANDLERS", "binary_op", "handler", "ListValue", "SetValue"]
