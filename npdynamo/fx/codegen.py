"""Code generation: an fx graph turned into the Python source of one plain function.

``GraphModule`` compiles this source; the eager backend hands the resulting function out as is,
so the code must cost no more than the NumPy calls it makes: each call node calls its op's
``impl`` bound as a global, values live in locals, constants are literals or globals.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from npdynamo.errors import NpdynamoError
from npdynamo.fx.node import Node, iter_nodes, target_name
from npdynamo.fx.sizes import symbol_prelude
from npdynamo.fx.subgraphs import is_subgraph
from npdynamo.generated import Namespace
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.registry import REGISTRY
from npdynamo.ops.symbolic import SymInt
from npdynamo.ops.symbolic_code import python_source

if TYPE_CHECKING:
    from npdynamo.fx.graph import Graph

# Types whose repr is a literal that evaluates back to an equal value of the same type.
_LITERAL_TYPES = (bool, int, str, bytes, type(None), type(Ellipsis))


class _Emitter(Namespace):
    """Renders arguments as Python expressions, binding what has no literal form as globals."""

    def __init__(self, reserved: set[str]) -> None:
        # Node names rarely start with an underscore, so globals seldom need a suffix to differ.
        super().__init__(reserved=reserved)
        self._constants = 0
        self.symbols: dict[str, str] = {}  # symbol -> the local holding its value
        # an op's lines -> its source (file, line, text); a node's lines name it, so are unique
        self.located: dict[str, tuple] = {}

    def constant(self, value: Any) -> str:
        """A global for a constant with no literal form: ``_const_0``, ``_const_1``, ..."""
        if id(value) not in self._by_id:
            self._constants += 1
        return self.bind(value, f"const_{self._constants - 1}")

    def symbol(self, name: str) -> str:
        """The local that holds the value of the size symbol ``name`` (bound at entry)."""
        if name not in self.symbols:
            self.symbols[name] = self.fresh(f"size_{name}")
        return self.symbols[name]

    def target(self, target: Any) -> str:
        impl = getattr(target, "impl", target)
        return self.bind(impl, target_name(target))

    def expr(self, a: Any) -> str:
        if isinstance(a, Node):
            return a.name
        kind = type(a)
        if kind in _LITERAL_TYPES:
            return self._literal(a)
        if kind is float:
            return repr(a) if math.isfinite(a) else self.constant(a)
        if kind is SymInt:
            return python_source(a, self.symbol)
        if kind is tuple:
            items = [self.expr(x) for x in a]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if kind is list:
            return "[" + ", ".join(self.expr(x) for x in a) + "]"
        if kind is dict:
            pairs = (f"{self.expr(k)}: {self.expr(v)}" for k, v in a.items())
            return "{" + ", ".join(pairs) + "}"
        if kind is slice:
            return f"slice({self.expr(a.start)}, {self.expr(a.stop)}, {self.expr(a.step)})"
        if is_subgraph(a):  # a branch or loop body: called through its own generated function
            return self.bind(a, a.name)
        if any(True for _ in iter_nodes(a)):
            raise NpdynamoError(
                f"cannot generate code for a {kind.__name__} holding graph values; "
                "use a plain tuple, list, dict or slice"
            )
        return self.constant(a)

    def subscript(self, index: Any) -> str:
        """What goes between the brackets of ``x[...]`` to index with ``index``."""
        if type(index) is tuple:
            items = [self._index_item(i) for i in index]
            return f"{items[0]}," if len(items) == 1 else ", ".join(items) or "()"
        return self._index_item(index)

    def _index_item(self, item: Any) -> str:
        if type(item) is slice:  # slice syntax builds the same slice object
            bounds = [("" if b is None else self.expr(b)) for b in (item.start, item.stop)]
            text = ":".join(bounds)
            return text if item.step is None else f"{text}:{self.expr(item.step)}"
        return self.expr(item)

    def _literal(self, a: Any) -> str:
        if a is Ellipsis:
            return "..."
        try:
            return repr(a)
        except ValueError:  # ints too long for str(); bind them instead
            return self.constant(a)

    def call(self, node: Node) -> str:
        symbol = operator_spelling(node)
        if symbol == "abs":
            return f"abs({self.expr(node.args[0])})"
        if symbol is not None and len(node.args) == 1:
            return f"{symbol}{self.expr(node.args[0])}"
        if symbol is not None:
            left, right = node.args
            return f"{self.expr(left)} {symbol} {self.expr(right)}"
        source = getattr(node.target, "source", None)  # an op's own spelling (``Op.source``)
        if source is not None and (text := source(node.args, node.kwargs, self.expr)):
            return text
        if node.target is REGISTRY.get("getitem") and len(node.args) == 2 and not node.kwargs:
            # ``x[i, j:]`` itself: the op's impl is this subscript, without a call around it
            return f"{self.expr(node.args[0])}[{self.subscript(node.args[1])}]"
        if (node.target is REGISTRY.get("transpose") and len(node.args) == 1
                and isinstance(node.args[0], Node) and set(node.kwargs) <= {"axes"}
                and type(node.args[0].meta.get("val")) is ArrayMeta):
            # a graph value is an ndarray or a NumPy scalar: np.transpose is its method
            axes = node.kwargs.get("axes")
            return f"{self.expr(node.args[0])}.transpose({'' if axes is None else self.expr(axes)})"
        return self.call_as(node, node.target)

    def call_as(self, node: Node, target: Any) -> str:
        """``target(<node's arguments>)``, whatever the node's op."""
        parts = [self.expr(a) for a in node.args]
        odd_keys = {}
        for key, value in node.kwargs.items():
            if isinstance(key, str) and key.isidentifier():
                parts.append(f"{key}={self.expr(value)}")
            else:
                odd_keys[key] = value
        if odd_keys:
            parts.append(f"**{self.expr(odd_keys)}")
        return f"{self.target(target)}({', '.join(parts)})"


#: The emitter, for a backend that generates its own arrangement of the graph's statements
#: (``backends/scheduler``: one function per stream, each node's call spelt as here).
Emitter = _Emitter


#: Comparisons spelt as operators when both sides are NumPy scalars (or Python numbers): the
#: scalar's own comparison gives the same ``np.bool_`` as the ufunc in ~15 ns instead of
#: ~450 ns, and a loop condition (``while err > tol``) runs it once per iteration.
_SCALAR_COMPARISONS = {
    "equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
    "greater_equal": ">=",
}
#: Arithmetic the user wrote as an operator between NumPy scalars (capture marks the node with
#: ``meta["operator"]``) is spelt as that operator: NumPy's scalar math is what Python ran, and
#: it differs from the ufunc in what it reports (integer overflow warns, or raises under
#: ``np.errstate``, where ``np.multiply`` wraps silently) and in speed (~90 ns against ~2 us).
#: ``np.add(a, b)`` written as a call stays a ufunc call.
_SCALAR_ARITHMETIC = {
    "add": "+", "subtract": "-", "multiply": "*", "divide": "/", "floor_divide": "//",
    "remainder": "%", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
    "left_shift": "<<", "right_shift": ">>",
    "negative": "-", "positive": "+", "invert": "~", "absolute": "abs",
}
_INT64 = 2**63


def operator_spelling(node: Node) -> str | None:
    """The Python operator ``node`` is generated as (both operands NumPy scalars or Python
    numbers), or None for a call of its op."""
    name = getattr(node.target, "name", None)
    symbol = _SCALAR_COMPARISONS.get(name)
    written = symbol is None and node.meta.get("operator") is not None
    if written:
        symbol = _SCALAR_ARITHMETIC.get(name)
        if symbol != node.meta["operator"]:
            return None
    if symbol is None or node.kwargs or len(node.args) != getattr(
            getattr(node.target, "impl", None), "nin", 2):
        return None
    if not any(isinstance(a, Node) for a in node.args):
        return None
    # (what the user wrote as an operator may also have a Python number of the graph as an
    # operand, ``float(a[0]) + a[1]``: Python's operator is what ran there)
    return symbol if all(_real_scalar(a) or (written and _python_number(a))
                         for a in node.args) else None


def _real_scalar(a: Any) -> bool:
    if isinstance(a, Node):  # a NumPy scalar (a Python number as a graph input is not one)
        meta = a.meta.get("val")
        return type(meta) is ArrayMeta and meta.scalar and meta.dtype.kind in "biuf"
    if type(a) is float or type(a) is bool:
        return True
    return type(a) is int and -_INT64 <= a < _INT64


def _python_number(a: Any) -> bool:
    """A graph value that is a Python int, float or bool (``float(x)``, a scalar input)."""
    meta = a.meta.get("val") if isinstance(a, Node) else None
    return type(meta) is ScalarMeta and meta.type in (int, float, bool)


def _source_comment(node: Node) -> str | None:
    source = node.meta.get("source")
    if not source:
        return None
    filename, lineno, line = source
    text = (line or "").strip().splitlines()
    where = f"{os.path.basename(str(filename))}:{lineno}"
    return f"# {where}  {text[0]}" if text else f"# {where}"


def _last_uses(graph: Graph) -> dict[Node, list[Node]]:
    """For each node, the intermediates whose last use it is (never outputs or inputs)."""
    last_user: dict[Node, Node] = {}
    for node in graph.nodes:
        for used in node.all_input_nodes:
            last_user[used] = node
    freed: dict[Node, list[Node]] = {}
    for value, user in last_user.items():
        if value.op == "call_function" and user.op == "call_function":
            freed.setdefault(user, []).append(value)
    for node in graph.nodes:  # a result nobody reads (kept for its effect) goes at once
        if node.op == "call_function" and node not in last_user:
            freed.setdefault(node, []).append(node)
    return freed


@dataclass
class Writes:
    """Where a backend lets the generated code write into existing arrays instead of new ones.

    The backend vouches for each choice (what may be written, and that nothing reads the old
    contents afterwards); the values computed are the graph's.

    * ``into_inputs``: ufunc call node -> input placeholder name. The nodes from the first of
      them to the end are generated twice: computing into the inputs (``out=``) when
      ``check()`` holds on the call, else as usual.
    * ``assign``: ``setitem`` nodes that assign into their array (``x[i] = v``) and stand for
      it, instead of a copy of it.
    * ``into_views``: ufunc call node -> the ``getitem`` view it computes into (``out=``); the
      ``setitem`` in ``assign`` storing that result back is then nothing to do.
    * ``assign_inputs``: ``setitem`` nodes that assign into their input array, like
      ``into_inputs`` only when ``check()`` holds (else they copy it, as usual).
    * ``into_temps``: ufunc call node -> an operand (an array the graph made) it computes into
      (``out=``), its buffer reused because nothing reads it afterwards.
    * ``assign_with``: nodes of ``assign``/``assign_inputs`` of another op than ``setitem``
      (``mask_apply``) -> the function that does their assignment in place: called with the
      node's arguments, it writes into the first and returns it.
    """

    into_inputs: dict[Node, str] = field(default_factory=dict)
    check: Callable[[], bool] | None = None
    assign: dict[Node, None] = field(default_factory=dict)
    into_views: dict[Node, Node] = field(default_factory=dict)
    assign_inputs: dict[Node, None] = field(default_factory=dict)
    into_temps: dict[Node, Node] = field(default_factory=dict)
    assign_with: dict[Node, Callable[..., Any]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.into_inputs or self.assign or self.assign_inputs or self.into_temps)


def _node_lines(nodes: list[Node], emitter: _Emitter, freed_after: dict[Node, list[Node]],
                writes: Writes, into_inputs: bool, indent: str) -> list[str]:
    lines, last_comment, open_state, outer = [], None, None, indent
    for node in nodes:
        state = node.meta.get("errstate")
        if state != open_state:  # a run of ops inside the user's ``with np.errstate(...)``
            if state:
                lines.append(f"{outer}with {emitter.bind(np.errstate, 'errstate')}"
                             f"(**{emitter.expr(dict(state))}):")
            open_state = state
        indent = outer + "    " if state else outer
        comment = _source_comment(node)
        if comment is not None and comment != last_comment:
            lines.append(f"{indent}{comment}")
        last_comment = comment
        start = len(lines)
        target = writes.into_inputs.get(node) if into_inputs else None
        if target is None and node in writes.into_views:
            target = writes.into_views[node].name
        if target is None and node in writes.into_temps:
            target = writes.into_temps[node].name
        if node in writes.assign_with and (
                node in writes.assign or (into_inputs and node in writes.assign_inputs)):
            lines.append(f"{indent}{node.name} = "
                         f"{emitter.call_as(node, writes.assign_with[node])}")
        elif node in writes.assign or (into_inputs and node in writes.assign_inputs):
            array, index, value = node.args
            if value not in writes.into_views:  # else the value is already in its place
                lines.append(f"{indent}{emitter.expr(array)}[{emitter.subscript(index)}] = "
                             f"{emitter.expr(value)}")
            lines.append(f"{indent}{node.name} = {emitter.expr(array)}")
        elif target is not None:  # a plain ufunc call (the backend checked): operands, out=
            operands = [emitter.expr(a) for a in node.args] + [f"out={target}"]
            lines.append(f"{indent}{node.name} = "
                         f"{emitter.target(node.target)}({', '.join(operands)})")
        else:
            lines.append(f"{indent}{node.name} = {emitter.call(node)}")
        source = node.meta.get("source")
        if source and source[1]:
            for line in lines[start:]:
                emitter.located.setdefault(line, source)
        # drop each temporary after its last use, so a large intermediate's memory is
        # reused by the next op instead of every call touching fresh pages
        if freed_after.get(node):
            lines.append(f"{indent}del {', '.join(n.name for n in freed_after[node])}")
    return lines


def generate_source(
    graph: Graph, fn_name: str = "forward", writes: Writes | None = None
) -> tuple[str, dict[str, Any]]:
    """The source of ``def fn_name(<placeholders>): ... return (<outputs>,)`` and its globals.

    A comment with the user's file, line and source text heads each run of nodes that came
    from the same line (``meta["source"]``, set by capture). ``writes``: a backend's choices of
    arrays to write into (see ``Writes``).
    """
    source, namespace, _lines = generate_source_with_lines(graph, fn_name, writes)
    return source, namespace


def generate_source_with_lines(
    graph: Graph, fn_name: str = "forward", writes: Writes | None = None
) -> tuple[str, dict[str, Any], dict[int, tuple]]:
    """``generate_source``, and for each generated line (1-based) an op of the line's source
    (file, line, text), so the compiled function can carry the user's lines (``user_lines``)."""
    if not fn_name.isidentifier():
        raise ValueError(f"the generated function needs an identifier name, not {fn_name!r}")
    writes = writes or Writes()
    emitter = _Emitter({n.name for n in graph.nodes} | {fn_name})
    params = ", ".join(p.name for p in graph.placeholders)
    lines = [f"def {fn_name}({params}):"]
    # symbolic sizes are read from the inputs' shapes once, at entry
    lines += [f"    {line}" for line in symbol_prelude(graph, emitter.symbol)]
    order = [n for n in graph.nodes if n.op == "call_function"]
    split = min((order.index(n) for n in (*writes.into_inputs, *writes.assign_inputs)),
                default=len(order))
    freed_after = _last_uses(graph)
    lines += _node_lines(order[:split], emitter, freed_after, writes, False, "    ")
    if writes.into_inputs or writes.assign_inputs:
        check = emitter.bind(writes.check, "in_place_check")
        lines.append(f"    if {check}():")
        lines += _node_lines(order[split:], emitter, freed_after, writes, True, "        ")
        lines.append("    else:")
        lines += _node_lines(order[split:], emitter, freed_after, writes, False, "        ")
    output = graph.output_node
    if output is not None:
        value = output.args[0] if output.args else ()
        if not isinstance(value, (tuple, list)):
            value = (value,)
        lines.append(f"    return {emitter.expr(tuple(value))}")
    located = {i: emitter.located[line] for i, line in enumerate(lines, 1)
               if line in emitter.located}
    return "\n".join(lines) + "\n", emitter.values, located
