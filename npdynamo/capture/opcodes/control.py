"""Handlers for control flow (jumps, loops, returns, raise) and for calls and function creation."""

from __future__ import annotations

from npdynamo.capture.builder import constant_value
from npdynamo.capture.bytecode.code import PY
from npdynamo.capture.calls import call_value
from npdynamo.capture.containers import (
    get_iter,
    items_of,
    truthiness,
)
from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.flow.assertions import speculate_assert
from npdynamo.capture.flow.comprehensions import form_comprehension
from npdynamo.capture.flow.for_loops import LazyRange, form_for
from npdynamo.capture.flow.loop_exits import graph_condition
from npdynamo.capture.flow.row_loops import rows_at_get_iter
from npdynamo.capture.flow.unrolled_loops import check_unroll
from npdynamo.capture.generators import is_lazy, next_item
from npdynamo.capture.identity import same_object
from npdynamo.capture.opcodes.layout import do_call, pop_callable
from npdynamo.capture.registry import handler
from npdynamo.capture.translator import Frame
from npdynamo.capture.values import (
    NULL,
    Const,
    DictValue,
    FunctionValue,
    IteratorValue,
    LoopIteratorValue,
    Value,
)


# -- control flow ----------------------------------------------------------------------------
@handler("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT")
def _jump(frame: Frame, ins):
    frame.jump(ins.arg)


def _jump_if(frame: Frame, ins, when: bool):
    value = frame.pop()
    passing = speculate_assert(frame, value, frame.ip - 1)
    if passing is not None:  # an assert on data, checked in the graph: its passing side
        if passing == when:
            frame.jump(ins.arg)
        return
    if graph_condition(frame, value, frame.ip - 1):  # a while loop on an array, in the graph
        return
    if truthiness(frame, value) == when:
        frame.jump(ins.arg)


@handler("POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE")
def _pop_jump_if_true(frame: Frame, ins):
    _jump_if(frame, ins, True)


@handler("POP_JUMP_IF_FALSE", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE")
def _pop_jump_if_false(frame: Frame, ins):
    _jump_if(frame, ins, False)


def _is_none(frame: Frame, value: Value) -> bool:
    return same_object(frame, value, Const(None))


@handler("POP_JUMP_IF_NONE", "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE")
def _pop_jump_if_none(frame: Frame, ins):
    if _is_none(frame, frame.pop()):
        frame.jump(ins.arg)


@handler("POP_JUMP_IF_NOT_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE")
def _pop_jump_if_not_none(frame: Frame, ins):
    if not _is_none(frame, frame.pop()):
        frame.jump(ins.arg)


@handler("JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP", until=(3, 11))
def _jump_or_pop(frame: Frame, ins):
    when = ins.name == "JUMP_IF_TRUE_OR_POP"
    if truthiness(frame, frame.stack[-1]) == when:
        frame.jump(ins.arg)
    else:
        frame.pop()


@handler("GET_ITER")
def _get_iter(frame: Frame, ins):
    value = frame.pop()
    rows = rows_at_get_iter(frame, value)  # for row in array: maybe one loop node
    if rows is not None:
        value = rows
    if isinstance(value, LazyRange):
        if form_for(frame, value):
            return  # the whole loop is one node; the frame goes on after it
        value = value.unformed()
    it = get_iter(frame, value)
    if isinstance(it, IteratorValue):
        it.loop_owned = True
    frame.push(it)


@handler("FOR_ITER")
def _for_iter(frame: Frame, ins):
    it = frame.stack[-1]
    if isinstance(it, LoopIteratorValue):
        raise frame.unsupported(
            "this loop has a graph break in its body (see the other breaks), so Python runs "
            "the loop: each step runs the graphs of the body",
            "move what breaks the graph (a print, .item(), an unknown call) out of the loop, "
            "so the whole loop can be captured",
        )
    if not isinstance(it, IteratorValue) and not is_lazy(it):
        raise frame.unsupported(f"a for loop over a {it.kind()}")
    if isinstance(it, IteratorValue):
        if form_comprehension(frame, it):
            return  # the whole comprehension is one node; the frame goes on at its exit
        check_unroll(frame, it)
    item = next_item(it)
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
def _end_for(frame: Frame, ins):
    frame.pop()
    if PY == (3, 12):
        frame.pop()


@handler("RETURN_VALUE")
def _return_value(frame: Frame, ins):
    frame.return_value = frame.pop()


@handler("RETURN_CONST", since=(3, 12))
def _return_const(frame: Frame, ins):
    frame.return_value = constant_value(ins.arg)


@handler("GET_LEN")
def _get_len(frame: Frame, ins):
    frame.push(call_value(frame, Const(len), [frame.stack[-1]], {}))


# -- calls and functions ---------------------------------------------------------------------
@handler("KW_NAMES", until=(3, 12))
def _kw_names(frame: Frame, ins):
    names = ins.arg
    frame.kw_names = names if isinstance(names, tuple) else tuple(frame.code.co_consts[names])


@handler("CALL", until=(3, 12))
def _call_312(frame: Frame, ins):
    names, frame.kw_names = frame.kw_names, ()
    do_call(frame, ins.arg, names)


@handler("CALL", since=(3, 13))
def _call_313(frame: Frame, ins):
    do_call(frame, ins.arg, ())


@handler("CALL_KW", since=(3, 13))
def _call_kw(frame: Frame, ins):
    names = frame.pop()
    do_call(frame, ins.arg, tuple(v.value for v in items_of(frame, names)))


@handler("CALL_FUNCTION_EX")
def _call_function_ex(frame: Frame, ins):
    kwargs = frame.pop() if ins.arg & 1 else DictValue({})
    args = frame.pop()
    fn, self_args = pop_callable(frame)
    if not isinstance(kwargs, DictValue):
        raise frame.unsupported("** of something that is not a dict")
    frame.push(call_value(frame, fn, self_args + items_of(frame, args), dict(kwargs.items)))


@handler("MAKE_FUNCTION", until=(3, 12))
def _make_function_312(frame: Frame, ins):
    code = frame.pop().value
    flags = ins.arg
    closure = tuple(frame.pop().items) if flags & 0x08 else ()
    if flags & 0x04:
        frame.pop()  # annotations do not change what the function computes (see ``annotated``)
    kwdefaults = dict(frame.pop().items) if flags & 0x02 else {}
    defaults = tuple(frame.pop().items) if flags & 0x01 else ()
    frame.push(FunctionValue(code, frame.globals, code.co_name, defaults, kwdefaults, closure,
                             annotated=bool(flags & 0x04)))


@handler("MAKE_FUNCTION", since=(3, 13))
def _make_function_313(frame: Frame, ins):
    code = frame.pop().value
    frame.push(FunctionValue(code, frame.globals, code.co_name))


@handler("SET_FUNCTION_ATTRIBUTE", since=(3, 13))
def _set_function_attribute(frame: Frame, ins):
    fn = frame.pop()
    value = frame.pop()
    flag = int(ins.arg)
    if flag == 0x08:
        fn.closure = tuple(value.items)
    elif flag == 0x02:
        fn.kwdefaults = dict(value.items)
    elif flag == 0x01:
        fn.defaults = tuple(value.items)
    elif flag == 0x04:
        fn.annotated = True
    frame.push(fn)


@handler("LOAD_ASSERTION_ERROR")
def _load_assertion_error(frame: Frame, ins):
    frame.push(Const(AssertionError))


@handler("RAISE_VARARGS")
def _raise(frame: Frame, ins):
    args = frame.popn(ins.arg)
    exc = args[0].value if args and isinstance(args[0], Const) else None
    if isinstance(exc, type) and issubclass(exc, BaseException):
        exc = exc()
    if isinstance(exc, BaseException):
        raise UserCodeRaises(exc)
    raise frame.unsupported("raise inside the compiled function")
