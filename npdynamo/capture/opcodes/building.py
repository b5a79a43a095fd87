"""Handlers that build tuples, lists, sets, dicts, slices and strings, and unpack sequences."""

from __future__ import annotations

from npdynamo.capture.containers import (
    const_key,
    extend_list,
    items_of,
    new_set,
    set_insert,
    store_subscript,
)
from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.registry import handler
from npdynamo.capture.translator import Frame
from npdynamo.capture.values import (
    Const,
    DictValue,
    ListValue,
    TupleValue,
    Value,
)


# -- building containers ---------------------------------------------------------------------
@handler("BUILD_TUPLE")
def _build_tuple(frame: Frame, ins):
    frame.push(TupleValue(frame.popn(ins.arg)))


@handler("BUILD_LIST")
def _build_list(frame: Frame, ins):
    frame.push(ListValue(frame.popn(ins.arg)))


@handler("BUILD_SET")
def _build_set(frame: Frame, ins):
    frame.push(new_set(frame, frame.popn(ins.arg)))


@handler("BUILD_MAP")
def _build_map(frame: Frame, ins):
    flat = frame.popn(2 * ins.arg)
    frame.push(DictValue({const_key(frame, k): v for k, v in zip(flat[::2], flat[1::2])}))


@handler("BUILD_CONST_KEY_MAP")
def _build_const_key_map(frame: Frame, ins):
    keys = frame.pop()
    values = frame.popn(ins.arg)
    frame.push(DictValue({const_key(frame, k): v for k, v in zip(items_of(frame, keys), values)}))


# A comprehension's target is fresh, except in a resume function that continues a comprehension
# after a graph break: there it came from outside, and the append is a side effect to replay.
@handler("LIST_APPEND")
def _list_append(frame: Frame, ins):
    value = frame.pop()
    extend_list(frame, frame.stack[-ins.arg], [value])


@handler("SET_ADD")
def _set_add(frame: Frame, ins):
    value = frame.pop()
    set_insert(frame, frame.stack[-ins.arg], [value])


@handler("LIST_EXTEND")
def _list_extend(frame: Frame, ins):
    value = frame.pop()
    frame.stack[-ins.arg].items.extend(items_of(frame, value))


@handler("SET_UPDATE")
def _set_update(frame: Frame, ins):
    value = frame.pop()
    set_insert(frame, frame.stack[-ins.arg], items_of(frame, value))


@handler("MAP_ADD")
def _map_add(frame: Frame, ins):
    value = frame.pop()
    key = frame.pop()
    store_subscript(frame, frame.stack[-ins.arg], key, value)


@handler("DICT_UPDATE", "DICT_MERGE")
def _dict_update(frame: Frame, ins):
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
def _list_to_tuple(frame: Frame, ins):
    frame.push(TupleValue(list(frame.pop().items)))


@handler("UNPACK_SEQUENCE")
def _unpack_sequence(frame: Frame, ins):
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
def _unpack_ex(frame: Frame, ins):
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
def _format(frame: Frame, value: Value, spec: str = "", conversion=None) -> Const:
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
def _format_value(frame: Frame, ins):
    flags = ins.arg if isinstance(ins.arg, int) else 0
    spec = frame.pop().value if flags & 0x04 else ""
    conversion = {1: str, 2: repr, 3: ascii}.get(flags & 0x03)
    frame.push(_format(frame, frame.pop(), spec, conversion))


@handler("CONVERT_VALUE", since=(3, 13))
def _convert_value(frame: Frame, ins):
    conversion = {1: str, 2: repr, 3: ascii}[int(ins.arg)]
    value = frame.pop()
    if not isinstance(value, Const):
        raise frame.unsupported("an f-string of a graph value needs its data in Python")
    frame.push(Const(conversion(value.value)))


@handler("FORMAT_SIMPLE", since=(3, 13))
def _format_simple(frame: Frame, ins):
    frame.push(_format(frame, frame.pop()))


@handler("FORMAT_WITH_SPEC", since=(3, 13))
def _format_with_spec(frame: Frame, ins):
    spec = frame.pop()
    frame.push(_format(frame, frame.pop(), spec.value))


@handler("BUILD_STRING")
def _build_string(frame: Frame, ins):
    parts = frame.popn(ins.arg)
    frame.push(Const("".join(p.value for p in parts)))
