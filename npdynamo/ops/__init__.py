"""The canonical op registry: the vocabulary every graph node, pass, VJP rule and backend uses.

Each op (``ops.add``, ``ops.sum``, ``ops.reshape``, ...) is an ``Op`` with its NumPy
implementation, its shape/dtype rule (``op.infer`` on ``ArrayMeta``s), its fusion kind and its
autograd flags; ``REGISTRY`` maps names to ops. ``normalize_call``/``normalize_method``/
``normalize_attribute`` and the operator tables turn user-level NumPy spellings into
canonical ``(op, args, kwargs)`` triples.
"""

from npdynamo.ops import (
    complex_parts,
    composite,
    creation,
    decompositions,
    elementwise,
    higher_order,
    histograms,
    indexing,
    inplace_functions,
    linalg,
    nonzero_indices,
    numeric,
    random,
    reductions,
    reorder,
    scalar_ops,
    scans,
    selection,
    shape_ops,
    solvers,
    speculation,
    statistics,
    tuples,
)
from npdynamo.ops.elementwise import infer_inplace
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.normalize import (
    BINARY_OPERATORS,
    INPLACE_OPERATORS,
    UNARY_OPERATORS,
    normalize_attribute,
    normalize_call,
    normalize_method,
    pow_shortcut,
)
from npdynamo.ops.registry import REGISTRY, REQUIRED, Op, UnsupportedArguments, lookup

# Every op is reachable as ``npdynamo.ops.<name>`` (some names, like sum/max/any, are builtins'
# names too: they are only ever used qualified, as ``ops.sum``).
globals().update(REGISTRY)

__all__ = [
    "ArrayMeta",
    "BINARY_OPERATORS",
    "INPLACE_OPERATORS",
    "Op",
    "REGISTRY",
    "REQUIRED",
    "ScalarMeta",
    "UNARY_OPERATORS",
    "UnsupportedArguments",
    "infer_inplace",
    "lookup",
    "normalize_attribute",
    "normalize_call",
    "normalize_method",
    "pow_shortcut",
    *REGISTRY,
]

del (complex_parts, composite, creation, decompositions, elementwise, higher_order, histograms,
     indexing, inplace_functions, linalg, nonzero_indices, numeric, reductions, random, reorder,
     scalar_ops, scans, selection, shape_ops, solvers, speculation, statistics, tuples)
