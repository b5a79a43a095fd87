"""``np.histogram`` with a number of equal bins: one op with two results (counts, edges).

The op runs NumPy's own ``np.histogram`` (the eager backend; the numba backend swaps in a
compiled loop for the common case, ``backends/numba/histograms.py``). Only what fixes the
results' shapes and dtypes before the data is seen is captured: ``bins`` a Python int, ``range``
``None`` or two Python numbers, ``density`` static, no ``weights``; any other call (bin edges
given as an array, a bin-selection method's name, weights, complex or boolean data) is a graph
break and runs in Python. Errors that depend on the data (an autodetected range that is not
finite) are NumPy's own, raised by the call.
"""

from __future__ import annotations

import warnings

import numpy as np

from npdynamo.ops import canonical as C
from npdynamo.ops.binding import functions
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import REGISTRY, Op, UnsupportedArguments, register
from npdynamo.ops.rules import to_meta


def _histogram(a, *, bins=10, range=None, density=None):  # noqa: A002 - NumPy's names
    return np.histogram(a, bins, range, density)


#: Above this many bins a given range is not checked by a trial call: the call is a break.
_TRIAL_BINS = 1 << 16


def _check_range(range_: object, dtype: np.dtype, bins: int) -> None:
    """NumPy's errors for a given range (reversed, not finite, too narrow for the bin dtype),
    which do not depend on the data: raised by NumPy itself on an empty array of ``dtype``."""
    if range_ is None:
        return
    if not (isinstance(range_, tuple) and len(range_) == 2
            and all(type(v) in (int, float) for v in range_)):
        raise UnsupportedArguments("histogram: range must be None or two Python numbers")
    if bins > _TRIAL_BINS:
        raise UnsupportedArguments("histogram: a given range with this many bins runs in Python")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.histogram(np.zeros(0, dtype), bins, range_)
        # NumPy makes the edges in the data's float dtype: a bound past its largest number is
        # an infinite edge there, and what NumPy then does depends on the data (an IndexError)
        edges = dtype if dtype.kind == "f" else np.dtype(np.float64)
        if not np.isfinite(np.asarray(range_, dtype=edges)).all():
            raise UnsupportedArguments(f"histogram: a range past {edges}'s numbers runs in Python")


def _histogram_rule(a: object, *, bins: object = 10, range: object = None,  # noqa: A002
                    density: object = None) -> tuple[ArrayMeta, ArrayMeta]:
    meta = to_meta("histogram", a)
    if meta.dtype.kind not in "iuf":
        raise UnsupportedArguments(f"histogram of {meta.dtype} data runs in Python")
    if type(bins) is not int:
        raise UnsupportedArguments("histogram: bins other than a Python int run in Python")
    if bins < 1:
        raise ValueError("`bins` must be positive, when an integer")
    _check_range(range, meta.dtype, bins)
    if density not in (None, False, True):
        raise UnsupportedArguments("histogram: density must be None or a bool")
    # NumPy's bin dtype: result_type(first edge, last edge, a), a float; edges given as Python
    # numbers are weak, an autodetected range has a's dtype
    edges = meta.dtype if meta.dtype.kind == "f" else np.dtype(np.float64)
    counts = np.dtype(np.float64) if density else np.dtype(np.intp)
    return ArrayMeta((bins,), counts), ArrayMeta((bins + 1,), edges)


register(Op("histogram", _histogram, _histogram_rule, differentiable=False,
            defaults={"bins": 10, "range": None, "density": None}))


@functions("histogram")
def _histogram_binder(a, bins=10, range=None, density=None, weights=None):  # noqa: A002
    C.require_default("histogram", weights=(weights, None))
    for name, value in (("bins", bins), ("range", range), ("density", density)):
        C.static("histogram", name, value)
    if isinstance(range, list):
        range = tuple(range)  # noqa: A001
    return C.canon(REGISTRY["histogram"], [C.operand("histogram", a)], bins=bins, range=range,
                   density=density)
