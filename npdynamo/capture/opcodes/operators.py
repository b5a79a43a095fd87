"""Handlers for operators (binary, in-place, comparison, unary, identity, membership); subscripts
and slices are in ``subscripts``."""

from __future__ import annotations

import operator

import numpy as np

from npdynamo import ops
from npdynamo.capture.builder import constant_value, is_constant
from npdynamo.capture.calls import fold_constants, op_call, raw
from npdynamo.capture.containers import (
    check_item_count,
    const_key,
    extend_list,
    items_of,
    truthiness,
)
from npdynamo.capture.errors import python_raised
from npdynamo.capture.flow.assertions import speculate_assert
from npdynamo.capture.flow.loop_exits import graph_condition
from npdynamo.capture.flow.while_loops import next_instruction
from npdynamo.capture.generators import is_lazy, lazy_contains
from npdynamo.capture.identity import same_object
from npdynamo.capture.masked import (
    MASKED_KINDS,
    MaskedRead,
    masked_binary,
    masked_inplace,
)
from npdynamo.capture.mixed_scalars import numpy_operands, truth_operands, unary
from npdynamo.capture.registry import handler
from npdynamo.capture.side_effects import cast_for_inplace, write_array
from npdynamo.capture.special_methods import user_binary_op
from npdynamo.capture.translator import Frame
from npdynamo.capture.values import (
    ArrayValue,
    Const,
    DictValue,
    DictViewValue,
    GuardedConst,
    ListValue,
    MixedScalarValue,
    ScalarInputValue,
    SetValue,
    SizeValue,
    TupleValue,
    UserObjectValue,
    Value,
)
from npdynamo.ops.meta import ScalarMeta
from npdynamo.ops.scalar_ops import BY_OPERATOR
from npdynamo.ops.symbolic import SymInt

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


def binary_op(frame: Frame, symbol: str, left: Value, right: Value) -> Value:
    """``left <symbol> right`` with Python's semantics on tracked values."""
    if isinstance(left, MixedScalarValue) or isinstance(right, MixedScalarValue):
        left, right = numpy_operands(frame, symbol, left, right)
    if isinstance(left, MASKED_KINDS) or isinstance(right, MASKED_KINDS):
        return masked_binary(frame, symbol, left, right)
    if isinstance(left, ArrayValue) or isinstance(right, ArrayValue):
        left, right = _numbers_as_array(left, right), _numbers_as_array(right, left)
        for side in (left, right):
            if not isinstance(side, (ArrayValue, Const)):
                raise frame.unsupported(
                    f"array {symbol} {side.kind()} (convert the Python container with np.array "
                    "outside the compiled function)"
                )
        if symbol == "**" and not frame.ctx.differentiating and all(
            side.meta.scalar if isinstance(side, ArrayValue) else True for side in (left, right)
        ):
            # Python's ** on NumPy scalars uses scalar math, which differs from np.power in the
            # last digit for about 1% of inputs: an op that calls that same ** (under grad, the
            # tape's tracers use np.power, and so does the captured loss)
            return op_call(frame, ops.REGISTRY["scalar_power"],
                           (array_operand(frame, left), array_operand(frame, right)), {})
        fast = (ops.pow_shortcut(left, right.value)
                if symbol == "**" and isinstance(right, Const) else None)
        if fast is not None:
            return op_call(frame, ops.REGISTRY[fast], (raw(left),), {})
        result = op_call(frame, ops.BINARY_OPERATORS[symbol],
                         (array_operand(frame, left), array_operand(frame, right)), {})
        return scalar_math(result, symbol, (left, right))
    if isinstance(left, UserObjectValue) or isinstance(right, UserObjectValue):
        return user_binary_op(frame, symbol, left, right)
    if isinstance(left, (DictViewValue, SetValue)) or isinstance(right, (DictViewValue, SetValue)):
        return _set_like_op(frame, symbol, left, right)
    if isinstance(left, Const) and isinstance(right, Const):
        dynamic = python_number_op(frame, symbol, left, right)
        if dynamic is not None:
            return dynamic
        if not (plain_builtin(left.value) and plain_builtin(right.value)):
            raise frame.unsupported(
                f"the operator {symbol} on a {type(left.value).__qualname__} and a "
                f"{type(right.value).__qualname__}"
            )
        return Const(fold_constants(frame, PY_OPERATORS[symbol], left.value, right.value))
    return _sequence_op(frame, symbol, left, right)


def scalar_math(result: Value, symbol: str, operands: tuple) -> Value:
    """``result`` of the operator ``symbol``, marked as NumPy's scalar math when every operand
    is a NumPy scalar or a Python number: Python ran the scalar's own operator there, not the
    ufunc (integer overflow warns; the backends spell it as the operator, ``fx.codegen``)."""
    if isinstance(result, ArrayValue) and result.meta.scalar and all(
            side.meta.scalar if isinstance(side, ArrayValue) else True for side in operands):
        result.node.meta["operator"] = symbol
    return result


def _numbers_as_array(side: Value, other: Value) -> Value:
    """A tuple or list of Python numbers next to an array: the ndarray's operator (Python
    tries it first, or after the sequence declines) converts it with np.asarray. Next to a
    NumPy scalar it stays a sequence (np.int64(2) * [1, 2] repeats the list)."""
    if not isinstance(other, ArrayValue) or other.meta.scalar:
        return side
    if not isinstance(side, (TupleValue, ListValue)) or not all(
            isinstance(item, Const) and type(item.value) in (bool, int, float, complex)
            for item in side.items):
        return side
    array = np.asarray([item.value for item in side.items])
    return side if array.dtype == object else Const(array)


def array_operand(frame: Frame, value: Value):
    """An operand of an operator with an array: a dynamic scalar stays a graph input (outside
    differentiated code, whose VJPs take constants), anything else its plain value."""
    if isinstance(value, ScalarInputValue) and not frame.ctx.differentiating:
        return value
    if isinstance(value, SizeValue) and not frame.ctx.differentiating:
        return value.expr
    return raw(value)


def python_number_op(frame: Frame, symbol: str, left: Const, right: Const) -> Value | None:
    """``lr * 0.5`` or ``step + 1`` where one side is a dynamic scalar: a graph op on Python
    numbers (``ops.scalar_ops``), whose result is a dynamic scalar too. None (the caller reads
    the values, specialising them) for other operators, operand types, a result type that
    depends on the values (``ops.scalar_ops`` refuses) or an error now."""
    sized = size_op(frame, symbol, left, right)
    if sized is not None:
        return sized
    op = BY_OPERATOR.get(PY_OPERATORS.get(symbol))
    dynamic = [side for side in (left, right) if isinstance(side, ScalarInputValue)]
    if op is None or not dynamic or frame.ctx.differentiating:
        return None
    # the values seen now, read without installing their guards
    values = [side._value if isinstance(side, GuardedConst) else side.value
              for side in (left, right)]
    if not all(type(v) in (int, float) for v in values):
        return None
    try:
        value = PY_OPERATORS[symbol](*values)
    except Exception:
        return None  # Python raises here: the caller reads the values and raises the same
    indexed = symbol in SIZE_OPERATORS and all(
        s.expr is not None if isinstance(s, ScalarInputValue) else isinstance(s, SizeValue)
        or type(s.value) is int for s in (left, right))  # n - i, i + 1: a loop index's size
    operands = tuple(s if isinstance(s, ScalarInputValue) else s.expr if indexed and isinstance(
        s, SizeValue) else s.value for s in (left, right))
    metas = tuple(s.node.meta["val"] if isinstance(s, ScalarInputValue) else ScalarMeta(int)
                  if isinstance(s, SymInt) else s for s in operands)
    try:
        op.infer(*metas)
    except Exception:
        return None
    node = frame.ctx.call_op(op, operands, {}).node

    def specialise() -> None:  # reading the result relies on the operands' values
        for side in dynamic:
            side.value  # noqa: B018 - installs its guard

    result = ScalarInputValue(value, None, specialise, node)
    if indexed:
        try:
            with frame.ctx.facts:
                result.expr = PY_OPERATORS[symbol](*(s.expr if isinstance(s, (
                    ScalarInputValue, SizeValue)) else s.value for s in (left, right)))
            node.meta["size_expr"] = result.expr
        except (ops.UnsupportedArguments, ArithmeticError):  # i // k, k == 0: no size
            pass
    return result


#: Operators whose result on sizes is a size (a ``SymInt`` expression).
SIZE_OPERATORS = frozenset({"+", "-", "*", "//", "%"})


def size_op(frame: Frame, symbol: str, left: Const, right: Const) -> Const | None:
    """``n - 1`` or ``n * d`` on symbolic sizes: another symbolic size (or an int when the
    expression folds). None when a side is not a size or a plain int, or the expression needs
    a decision the sizes cannot answer."""
    if symbol not in SIZE_OPERATORS or not any(isinstance(s, SizeValue) for s in (left, right)):
        return None
    exprs = []
    for side in (left, right):
        if isinstance(side, SizeValue):
            exprs.append(side.expr)
        elif type(side) is Const and type(side.value) is int:
            exprs.append(side.value)
        else:
            return None
    try:
        with frame.ctx.facts:
            result = PY_OPERATORS[symbol](*exprs)
    except Exception:
        return None
    return frame.ctx.size_value(result)


def _set_like_op(frame: Frame, symbol: str, left: Value, right: Value) -> Value:
    """Operators on sets and dict views of constants, computed on real Python objects built
    from them (so results, result types and errors are CPython's); the result is a new set."""
    if symbol == "==" and (isinstance(left, DictViewValue) and left.which == "values"):
        return Const(left is right)  # dict_values compares by identity
    operands = _plain_set_like(frame, left), _plain_set_like(frame, right)
    try:
        result = PY_OPERATORS[symbol](*operands)
    except Exception as exc:
        raise python_raised(exc)  # noqa: B904 - the cause is set (or exc is re-raised)
    if isinstance(result, (bool, type(NotImplemented))):
        return Const(result)
    if type(result) is set:
        # in the real result's own iteration order (its table may be sized differently from
        # one built item by item)
        return SetValue([constant_value(v) for v in result], table=result)
    raise frame.unsupported(f"the operator {symbol} on a {left.kind()} and a {right.kind()}")


def _plain_set_like(frame: Frame, value: Value) -> object:
    """A real object standing for ``value`` whose items are all constants."""
    if isinstance(value, DictViewValue):
        d = value.mapping
        if value.which == "values":
            raise frame.unsupported("an operator on dict.values()")
        plain = dict.fromkeys(d.items)
        if value.which == "items":
            plain = {k: _plain_set_like(frame, v) for k, v in d.items.items()}
        return getattr(plain, value.which)()
    if isinstance(value, (SetValue, TupleValue, ListValue)):
        kind = (set if isinstance(value, SetValue)
                else list if isinstance(value, ListValue) else tuple)
        return kind(_plain_set_like(frame, v) for v in value.items)
    if isinstance(value, Const) and is_constant(value.value):
        return value.value
    raise frame.unsupported(f"an operator between a set or dict view and a {value.kind()}")


def plain_builtin(value: object) -> bool:
    """An object of a builtin or NumPy type (a number, a dtype, a class, a module): operators on
    it run no user-defined method."""
    module = type(value).__module__ or ""
    return is_constant(value) or module == "builtins" or module.split(".")[0] == "numpy"


def _as_tuple(value: Value) -> Value:
    """A constant tuple as a tuple of constants, so both compare item by item."""
    if isinstance(value, Const) and type(value.value) is tuple:
        return TupleValue([Const(v) for v in value.value])
    return value


def _plain_kind(seq: Value) -> type:
    return TupleValue if isinstance(seq, TupleValue) else ListValue


def _sequence_op(frame: Frame, symbol: str, left: Value, right: Value) -> Value:
    sequences = (TupleValue, ListValue)
    # a named tuple's + and * give plain tuples; CPython returns an exact tuple operand itself
    # when the other is empty, or when it is repeated once
    if symbol == "+" and isinstance(left, sequences) and isinstance(right, sequences) and (
            _plain_kind(left) is _plain_kind(right)):
        if type(left) is TupleValue and not right.items:
            return left
        if type(right) is TupleValue and not left.items:
            return right
        return _plain_kind(left)(left.items + right.items)
    if symbol == "*" and isinstance(right, sequences) and isinstance(left, Const):
        left, right = right, left
    if symbol == "*" and isinstance(left, sequences) and isinstance(right, Const):
        if type(right.value) is not int and not isinstance(right.value, (bool, np.integer)):
            raise frame.unsupported(f"a sequence times a {type(right.value).__name__}")
        if type(left) is TupleValue and right.value == 1:
            return left
        check_item_count(frame, left.length() * int(right.value), f"a {left.kind()} repeated")
        return _plain_kind(left)(left.items * int(right.value))
    if symbol in ("==", "!="):
        left, right = _as_tuple(left), _as_tuple(right)
        if isinstance(left, sequences) or isinstance(right, sequences):
            same = _sequences_equal(frame, left, right)
            return Const(same if symbol == "==" else not same)
    raise frame.unsupported(f"the operator {symbol} on {left.kind()} and {right.kind()}")


def _is_nan(value: Value) -> bool:
    return isinstance(value, Const) and type(value.value) in (float, complex) and (
        value.value != value.value)


def _sequences_equal(frame: Frame, a: Value, b: Value) -> bool:
    """``a == b`` for lists and tuples as CPython compares them: same type and length, then
    item by item with an identity shortcut, each item's ``==`` run as Python would."""
    if type(a) is not type(b):
        if isinstance(a, (Const, TupleValue, ListValue)) and isinstance(
            b, (Const, TupleValue, ListValue)
        ):
            return False  # a list never equals a tuple or a number
        raise frame.unsupported(f"comparing a {a.kind()} with a {b.kind()}")
    if a.length() != b.length():
        return False
    for x, y in zip(a.items, b.items):
        if x is y:
            continue
        if _is_nan(x) and _is_nan(y):  # one nan object equals itself, as CPython compares
            if not same_object(frame, x, y):
                return False
            continue
        if not truthiness(frame, binary_op(frame, "==", _as_tuple(x), _as_tuple(y))):
            return False
    return True


def inplace_op(frame: Frame, symbol: str, target: Value, other: Value) -> Value:
    """``target <symbol>= other``: arrays and lists change in place, numbers (NumPy scalars
    too: they are immutable) rebind."""
    if isinstance(target, MaskedRead):
        return masked_inplace(frame, target, symbol, other)
    if isinstance(target, ArrayValue) and not target.meta.scalar:
        result = binary_op(frame, symbol, target, other)
        write_array(frame.ctx, target, cast_for_inplace(frame.ctx, result, target))
        return target
    if isinstance(target, ListValue) and symbol == "+":
        extend_list(frame, target, items_of(frame, other))
        return target
    return binary_op(frame, symbol, target, other)


@handler("BINARY_OP")
def _binary_op(frame: Frame, ins):
    right = frame.pop()
    left = frame.pop()
    name = ins.arg.name
    if name.startswith("INPLACE_"):
        frame.push(inplace_op(frame, BINARY_SYMBOLS[name[len("INPLACE_") :]], left, right))
    else:
        frame.push(binary_op(frame, BINARY_SYMBOLS[name], left, right))


COMPARE_SYMBOLS = {"LT": "<", "LE": "<=", "EQ": "==", "NE": "!=", "GT": ">", "GE": ">="}


#: What reads only the truth of the value on top of the stack.
TRUTH_READERS = frozenset({"POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE",
                           "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_FALSE",
                           "POP_JUMP_BACKWARD_IF_TRUE", "TO_BOOL"})


def _truth_only(frame: Frame) -> bool:
    return frame.instrs[next_instruction(frame)].name in TRUTH_READERS


@handler("COMPARE_OP")
def _compare_op(frame: Frame, ins):
    right = frame.pop()
    left = frame.pop()
    # 3.13 adds *_CAST forms that also convert the result to bool (same comparison)
    symbol = COMPARE_SYMBOLS[ins.arg.name.removesuffix("_CAST")]
    numbers = truth_operands(left, right) if (
        isinstance(left, MixedScalarValue) or isinstance(right, MixedScalarValue)) and (
        ins.arg.name.endswith("_CAST") or _truth_only(frame)) else None
    if numbers is not None:  # only its truth is asked: bool or np.bool_ does not matter
        left, right = numbers
    result = binary_op(frame, symbol, left, right)
    if ins.arg.name.endswith("_CAST"):
        # 3.13 converts to an exact bool here, for the conditional jump that follows (which
        # may guard an assert's failing block, as after TO_BOOL)
        passing = speculate_assert(frame, result, next_instruction(frame))
        if passing is not None:
            frame.push(Const(passing))
            return
        if graph_condition(frame, result, next_instruction(frame)):
            return  # the test of a while loop captured in the graph
        result = Const(truthiness(frame, result))
    frame.push(result)


def unary_op(frame: Frame, symbol: str, value: Value) -> Value:
    """``<symbol> value``, or ``abs(value)`` for the symbol ``abs``."""
    if isinstance(value, MixedScalarValue) and symbol in ("-", "+", "abs"):
        return unary(symbol, value, lambda number: unary_op(frame, symbol, number))
    if isinstance(value, ArrayValue):
        return scalar_math(op_call(frame, ops.UNARY_OPERATORS[symbol], (value,), {}), symbol,
                           (value,))
    if isinstance(value, ScalarInputValue) and symbol == "-" and (
            value.node.meta.get("val") == ScalarMeta(int)):
        negated = python_number_op(frame, "-", Const(0), value)  # -n is 0 - n for an int
        if negated is not None:
            return negated
    if isinstance(value, Const):
        fn = {"-": operator.neg, "+": operator.pos, "~": operator.invert}[symbol]
        plain = value.value  # outside the try: a value only the run time knows refuses here
        return Const(fold_constants(frame, fn, plain))
    raise frame.unsupported(f"unary {symbol} on a {value.kind()}")


@handler("UNARY_NEGATIVE")
def _unary_negative(frame: Frame, ins):
    frame.push(unary_op(frame, "-", frame.pop()))


@handler("UNARY_INVERT")
def _unary_invert(frame: Frame, ins):
    frame.push(unary_op(frame, "~", frame.pop()))


@handler("UNARY_POSITIVE", until=(3, 11))
def _unary_positive(frame: Frame, ins):
    frame.push(unary_op(frame, "+", frame.pop()))


@handler("CALL_INTRINSIC_1", since=(3, 12))
def _call_intrinsic_1(frame: Frame, ins):
    name = ins.arg.name
    if name == "INTRINSIC_UNARY_POSITIVE":
        frame.push(unary_op(frame, "+", frame.pop()))
    elif name == "INTRINSIC_LIST_TO_TUPLE":
        frame.push(TupleValue(list(frame.pop().items)))
    else:
        raise frame.unsupported(f"the Python construct behind {name} is not supported")


@handler("UNARY_NOT")
def _unary_not(frame: Frame, ins):
    frame.push(Const(not truthiness(frame, frame.pop())))


@handler("TO_BOOL", since=(3, 13))
def _to_bool(frame: Frame, ins):
    value = frame.pop()
    passing = speculate_assert(frame, value, next_instruction(frame))
    if passing is not None:  # the jump next follows the assert's passing side
        frame.push(Const(passing))
    elif not graph_condition(frame, value, next_instruction(frame)):
        frame.push(Const(truthiness(frame, value)))


@handler("IS_OP")
def _is_op(frame: Frame, ins):
    right = frame.pop()
    left = frame.pop()
    frame.push(Const(same_object(frame, left, right) != bool(ins.arg)))


@handler("CONTAINS_OP")
def _contains_op(frame: Frame, ins):
    container = frame.pop()
    item = frame.pop()
    if isinstance(container, DictValue) or (
        isinstance(container, DictViewValue) and container.which == "keys"
    ):
        mapping = container if isinstance(container, DictValue) else container.mapping
        found = const_key(frame, item) in mapping.items
    elif isinstance(container, UserObjectValue):
        raise frame.unsupported("`in` on a user object (its __contains__ or __iter__)")
    elif (
        isinstance(container, Const)
        and isinstance(item, Const)
        and is_constant(container.value)
        and is_constant(item.value)
    ):
        try:
            found = item.value in container.value
        except Exception as exc:
            raise python_raised(exc)  # noqa: B904 - the cause is set (or exc is re-raised)
    elif is_lazy(container):
        found = lazy_contains(frame, container, item)
    else:
        members = items_of(frame, container)
        if all(isinstance(m, Const) and is_constant(m.value) for m in [item, *members]):
            found = item.value in [m.value for m in members]
        elif isinstance(container, (TupleValue, ListValue)):
            found = any(_contains_item(frame, m, item) for m in members)
        else:  # a set hashes first; other iterables are stepped (and may be left part-way)
            raise frame.unsupported("`in` on values that are not Python constants")
    frame.push(Const(found != bool(ins.arg)))


def _contains_item(frame: Frame, member: Value, item: Value) -> bool:
    """One step of a sequence's ``in``, as CPython's: the same object, or ``member == item``."""
    if same_object(frame, member, item):
        return True
    return truthiness(frame, binary_op(frame, "==", member, item))
