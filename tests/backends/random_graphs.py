"""A hypothesis strategy for random graphs of elementwise ops and reductions, with inputs.

Graphs are built with the fx API from canonical ops: chains of unary and binary ufuncs,
``where``/``clip``/``astype``/integer powers and reductions over the last axis or everything,
on inputs that broadcast against each other, in mixed dtypes. Float inputs are multiples of 1/4
plus nan, +-inf and -0.0, so that sums are exact in any order and results can be compared
closely; integers include the dtype's extremes (wrap-around).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from npdynamo import ops
from npdynamo.fx import Graph
from npdynamo.ops.meta import ArrayMeta

DTYPES = [np.dtype(t) for t in ("float32", "float64", "int32", "int64", "int8", "uint8", "bool")]
DOMAINS = [(7,), (3, 5), (2, 3, 4), ()]
#: Domains with more elements than one block of a kernel's blocked sums (codegen.BLOCK), drawn
#: less often: their values repeat a short drawn pattern.
LARGE_DOMAINS = [(2, 1100), (2100,)]
PATTERN = 37
UNARY = [
    "negative",
    "absolute",
    "square",
    "sqrt",
    "floor",
    "rint",
    "isnan",
    "isfinite",
    "logical_not",
    "invert",
    "sign",
    "positive",
    "reciprocal",
    "trunc",
]
BINARY = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "less",
    "equal",
    "greater_equal",
    "not_equal",
    "logical_and",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "floor_divide",
    "remainder",
]
#: Ops whose kernel code rounds differently from NumPy (``approx``, libm calls), drawn anywhere in
#: a graph when ``transcendental`` is set (reductions of their inputs before them, broadcasts
#: after).
TRANSCENDENTAL = ["exp", "tanh", "log", "sin", "arctan", "log1p"]
TRANSCENDENTAL_BINARY = ["arctan2", "hypot", "logaddexp"]
REDUCTIONS = ["sum", "mean", "max", "min", "prod", "any", "all"]
CONSTANTS = [0, 1, 2, -3, 0.5, -1.25, 0.0, -0.0, True, float("inf"), float("nan")]
FLOAT_SPECIALS = [np.nan, np.inf, -np.inf, -0.0, 0.0]


@dataclass
class RandomGraph:
    graph: Graph
    inputs: list
    description: str
    #: the comparison's tolerance: float32's for every result once a float32 value of limited
    #: accuracy (a transcendental) may flow into a float64 result; None: each dtype's own
    rtol: float | None = None

    def __repr__(self) -> str:
        return self.description


def _values(draw, shape: tuple[int, ...], dtype: np.dtype):
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    n = min(size, PATTERN)
    if dtype.kind == "b":
        flat = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        pool = st.one_of(
            st.integers(-5, 6).filter(lambda v: v >= info.min),
            st.sampled_from([int(info.min), int(info.max)]),
        )
        flat = draw(st.lists(pool, min_size=n, max_size=n))
    else:
        pool = st.one_of(st.integers(-16, 16).map(lambda k: k / 4), st.sampled_from(FLOAT_SPECIALS))
        flat = draw(st.lists(pool, min_size=n, max_size=n))
    arr = np.array(flat, dtype=np.float64 if dtype.kind == "f" else object).astype(dtype)
    return np.resize(arr, size).reshape(shape)


def _input_shape(draw, domain: tuple[int, ...]) -> tuple[int, ...]:
    shape = list(domain)
    for i in range(len(shape)):
        if draw(st.integers(0, 3)) == 0:
            shape[i] = 1
    drop = draw(st.integers(0, len(shape))) if draw(st.booleans()) else 0
    return tuple(shape[drop:])


@st.composite
def random_graphs(draw, max_steps: int = 9, transcendental: bool = True) -> RandomGraph:
    domain = draw(st.sampled_from(DOMAINS if draw(st.integers(0, 4)) else LARGE_DOMAINS))
    unary = UNARY + TRANSCENDENTAL if transcendental else UNARY
    binary = BINARY + TRANSCENDENTAL_BINARY if transcendental else BINARY
    graph = Graph()
    values: list = []  # (node, meta)
    inputs = []
    for i in range(draw(st.integers(1, 3))):
        shape = domain if i == 0 else _input_shape(draw, domain)
        dtype = draw(st.sampled_from(DTYPES))
        meta = ArrayMeta(shape, dtype)
        values.append((graph.placeholder(f"x{i}", meta), meta))
        inputs.append(_values(draw, shape, dtype))
    steps = []
    rtol = None
    for _ in range(draw(st.integers(3, max_steps))):
        kind = draw(st.sampled_from(["binary", "reduce", "const", "special", "unary", "binary"]))
        pick = lambda: draw(st.sampled_from(values))  # noqa: E731
        const = lambda: draw(st.sampled_from(CONSTANTS))  # noqa: E731
        if kind == "unary":
            op, args, kwargs = ops.lookup(draw(st.sampled_from(unary))), (pick()[0],), {}
        elif kind in ("binary", "const"):
            a, b = pick()[0], (pick()[0] if kind == "binary" else const())
            if draw(st.booleans()):
                a, b = b, a
            op, args, kwargs = ops.lookup(draw(st.sampled_from(binary))), (a, b), {}
        elif kind == "reduce":
            node, meta = pick()
            op = ops.lookup(draw(st.sampled_from(REDUCTIONS)))
            axis = draw(st.sampled_from([None, -1, (-2, -1)]))
            kwargs = {"keepdims": True} if draw(st.booleans()) else {}
            if axis is not None:
                kwargs["axis"] = axis
            args = (node,)
        else:
            special = draw(st.sampled_from(["where", "clip", "astype", "power"]))
            op = ops.lookup(special)
            kwargs = {}
            if special == "where":
                args = (
                    pick()[0],
                    pick()[0],
                    draw(st.one_of(st.just(pick()[0]), st.sampled_from(CONSTANTS))),
                )
            elif special == "clip":
                args = (
                    pick()[0],
                    draw(st.sampled_from([None, -1, 0.5])),
                    draw(st.sampled_from([None, 2, 3.5])),
                )
            elif special == "astype":
                args, kwargs = (pick()[0],), {"dtype": draw(st.sampled_from(DTYPES))}
            else:
                args = (pick()[0], draw(st.sampled_from([2, 3, 2.0])))
        metas = tuple(next((m for n, m in values if n is a), a) for a in args)
        try:
            meta = op.infer(*metas, **kwargs)
        except Exception:  # noqa: S112 - NumPy would refuse this call: draw the next step
            continue
        node = graph.call_function(op, args, kwargs)
        node.meta["val"] = meta
        if op.name in TRANSCENDENTAL + TRANSCENDENTAL_BINARY and meta.dtype == np.float32:
            rtol = 1e-5
        values.append((node, meta))
        steps.append(f"{node.name} = {op.name}{args}{kwargs or ''}")
    outputs = [values[-1][0]]
    for node, _ in values[:-1]:
        if node.op != "placeholder" and draw(st.booleans()):
            outputs.append(node)
    if transcendental and draw(st.booleans()):
        last, meta = values[-1]
        if meta.dtype.kind == "f":
            op = ops.lookup(draw(st.sampled_from(["exp", "tanh"])))
            node = graph.call_function(op, (last,))
            node.meta["val"] = op.infer(meta)
            outputs.append(node)
            steps.append(f"{node.name} = {op.name}({last.name})")
    if draw(st.integers(0, 4)) == 0:
        outputs.append(values[0][0])  # an input returned as is
    graph.output(tuple(outputs))
    shapes = ", ".join(f"{x.dtype}{list(x.shape)}" for x in inputs)
    return RandomGraph(graph, inputs, f"inputs {shapes}: " + "; ".join(steps), rtol)
