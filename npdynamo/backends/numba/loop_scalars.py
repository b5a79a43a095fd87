"""Python numbers in loop programs: the loop writer's nopython code for Python int and float
arithmetic and comparisons (``loop_writer.Writer`` mixes ``ScalarCode`` in), with Python's
semantics where int64 differs (``loop_runtime``'s checked helpers raise, and the loop then
reruns in Python; plain int64 arithmetic where the operands' intervals prove every result fits,
``int_range``: a range's index plus or minus constants and array lengths), and the rewrite
that lets kernels take the loop index where it meets float64 arrays.
``NotCompilable``/``NoNopythonForm`` say what the writer cannot express."""

from __future__ import annotations

from typing import Any

import numpy as np

from npdynamo.backends.numba.loop_inplace import node_meta
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.scalar_ops import SCALAR_OPS

PY_BINARY = {"py_add": "+", "py_sub": "-", "py_mul": "*"}
INT_HELPERS = {"py_add": "int_add", "py_sub": "int_sub", "py_mul": "int_mul",
               "py_floordiv": "int_floordiv", "py_mod": "int_mod"}
#: float64 ufuncs that compute the same with a weak Python int operand as with its float
WEAK_INT_SAFE = frozenset({"add", "subtract", "multiply", "divide", "true_divide", "maximum",
                           "minimum"})
#: NumPy comparisons the writer computes itself when both operands are Python ints (or both
#: Python floats): NumPy compares those exactly (int64 or float64 loops; an int beyond int64
#: never reaches compiled code, whose ints are int64 and whose int arithmetic raises first)
COMPARISONS = {"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
               "equal": "==", "not_equal": "!="}


class NotCompilable(Exception):
    """The loop has something the writer cannot express in nopython code (the message: why)."""


class NoNopythonForm(NotCompilable):
    """The writer has no nopython form for this op with these arguments: a NumPy call."""


def _is_float64(value: Any) -> bool:
    meta = node_meta(value)
    if isinstance(meta, ScalarMeta):
        return meta.type is float
    if isinstance(meta, ArrayMeta):
        return meta.dtype == np.float64
    return type(value) in (int, float) or (isinstance(value, np.ndarray)
                                           and value.dtype == np.float64)


def int_operands_as_floats(graph: Graph) -> None:
    """Let kernels take the loop index (a dynamic Python int) where it meets float64 arrays.

    Kernels refuse dynamic ints (NumPy checks an int against an integer loop's dtype on each
    call). In a float64 ``add``/``multiply``/... whose other operands are float64, NumPy
    computes with ``float(i)`` whether the operand is the int or that float: the same float64
    loop on the same value. So such an operand becomes ``py_mul(i, 1.0)`` (exactly
    ``float(i)``), a dynamic float the kernels take. ``graph`` is the loop's own copy.
    """
    for node in list(graph.nodes):
        if getattr(node.target, "name", "") not in WEAK_INT_SAFE or node.kwargs:
            continue
        ints = [a for a in node.args
                if isinstance(node_meta(a), ScalarMeta) and node_meta(a).type is int]
        if not ints or not _is_float64(node) or not all(
                _is_float64(a) for a in node.args if a not in ints):
            continue
        for a in dict.fromkeys(ints):
            with graph.inserting_before(node):
                as_float = graph.call_function(SCALAR_OPS["py_mul"], (a, 1.0))
            as_float.meta["val"] = ScalarMeta(float)
            node.replace_input_with(a, as_float)


def mark_int64(graph: Graph) -> None:
    """Mark each Python int of a loop's graph as an int64 (``meta["int64"]``): in the compiled
    loop it is one (its arithmetic raises before it leaves int64's range, and an int beyond it
    never enters), so a kernel may take it where NumPy converts a Python int exactly (an
    int64 or float64 loop: ``labels == i``), where a top-level graph's int, which may be any
    size, stays a NumPy call. ``graph`` is the loop's own copy."""
    for node in graph.nodes:
        meta = node_meta(node)
        if isinstance(meta, ScalarMeta) and meta.type is int:
            node.meta["int64"] = True


#: the values an int64 holds: a Python int result proved within them is the int64 result
INT64 = (-(2**63), 2**63 - 1)


def _within(lo: int, hi: int) -> tuple[int, int] | None:
    return (lo, hi) if INT64[0] <= lo and hi <= INT64[1] else None


def int_range(name: str, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    """The values Python's ``a <op> b`` can take for ints within the intervals ``a`` and
    ``b``, when every one of them fits in an int64 (then int64 arithmetic gives Python's exact
    result: no overflow check is needed); None otherwise, or for an op not bounded here."""
    if name == "py_add":
        return _within(a[0] + b[0], a[1] + b[1])
    if name == "py_sub":
        return _within(a[0] - b[1], a[1] - b[0])
    if name == "py_mul":
        products = [x * y for x in a for y in b]
        return _within(min(products), max(products))
    if b[0] == b[1] and b[0] > 0:  # a positive constant divisor: no ZeroDivisionError
        if name == "py_floordiv":
            return (a[0] // b[0], a[1] // b[0])
        if name == "py_mod":  # (Python's modulo takes the divisor's sign, as numba's does)
            return (0, b[0] - 1)
    return None


class ScalarCode:
    """Expressions of Python numbers' ops (a mixin of the writer, whose ``value`` renders an
    operand). ``ranges``: the interval of values of each int local the writer proved bounded
    (a loop index, arithmetic on it and on constants and sizes), each assigned once."""

    ranges: dict[str, tuple[int, int]]

    def value(self, v: Any, env: dict[Node, str]) -> str:  # pragma: no cover - the writer's
        raise NotImplementedError

    def interval(self, v: Any, env: dict[Node, str]) -> tuple[int, int] | None:
        """The values the int operand ``v`` can take (None: not known to be bounded)."""
        if type(v) is int:
            return (v, v)
        if isinstance(v, Node) and v in env:
            return self.ranges.get(env[v])
        return self.expr_interval(self.value(v, env)) if v is not None else None

    def expr_interval(self, expr: str) -> tuple[int, int] | None:
        try:
            c = int(expr)
        except ValueError:
            return self.ranges.get(expr)
        return (c, c)

    def py_binary(self, node: Node, name: str, env: dict[Node, str]) -> str:
        a, b = (self.value(v, env) for v in node.args)
        kind = self.py_kind(node)
        if kind is int:
            ia, ib = (self.interval(v, env) for v in node.args)
            if ia is not None and ib is not None and int_range(name, ia, ib) is not None:
                # every result fits in an int64 (``int_range``): plain int64 arithmetic,
                # which LLVM folds into the indexing, where the checked helper cannot be
                symbol = {"py_floordiv": "//", "py_mod": "%"}.get(name) or PY_BINARY[name]
                return f"({a} {symbol} {b})"
            return f"{INT_HELPERS[name]}({a}, {b})"
        if name not in PY_BINARY:
            raise NoNopythonForm(f"{name} of Python floats")
        return f"({a} {PY_BINARY[name]} {b})"

    def py_other(self, node: Node, name: str, env: dict[Node, str]) -> str:
        kind = self.py_kind(node)
        args = [self.value(v, env) for v in node.args]
        if name == "py_truediv":
            if all(self.py_operand_kind(v) is int for v in node.args):
                raise NoNopythonForm("a true division of two Python ints")
            return f"true_divide({args[0]}, {args[1]})"
        (a,) = args
        if name == "py_pos":
            return a
        if kind is int:
            neg = f"int_sub(0, {a})"
            return neg if name == "py_neg" else f"({a} if {a} >= 0 else {neg})"
        return f"(-{a})" if name == "py_neg" else f"abs({a})"

    def py_compare(self, node: Node, name: str, env: dict[Node, str]) -> str:
        """A NumPy comparison of two Python ints or two Python floats (``it >= max_iter``):
        NumPy's bool of the same comparison, where the kernels refuse dynamic Python ints."""
        meta = node_meta(node)
        kinds = {self.py_operand_kind(v) for v in node.args}
        if len(node.args) != 2 or len(kinds) != 1 or not kinds <= {int, float} or not (
                isinstance(meta, ArrayMeta) and meta.scalar and meta.dtype == np.bool_):
            raise NoNopythonForm(f"{name} other than of two Python ints or floats")
        a, b = (self.value(v, env) for v in node.args)
        return f"({a} {COMPARISONS[name]} {b})"

    def py_kind(self, node: Node) -> type:
        meta = node_meta(node)
        if not isinstance(meta, ScalarMeta) or meta.type not in (int, float):
            raise NoNopythonForm("Python arithmetic other than of int and float")
        for v in node.args:
            if self.py_operand_kind(v) not in (int, float):
                raise NoNopythonForm("Python arithmetic with a NumPy value")
        return meta.type

    @staticmethod
    def py_operand_kind(v: Any) -> type | None:
        meta = node_meta(v)
        if isinstance(meta, ScalarMeta):
            return meta.type
        return type(v) if type(v) in (int, float) else None
