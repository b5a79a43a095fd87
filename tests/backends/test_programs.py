"""Capture programs (``tests/capture``) compiled with the numba backend, against plain Python:
the same values within the documented tolerance, dtypes, types, and arguments left unchanged."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import npdynamo
from npdynamo.backends.numba import NumbaFallbackWarning
from tests.backends.compare import assert_close
from tests.capture import programs_more  # noqa: F401  (registers more programs)
from tests.capture.programs import PROGRAMS

# Programs whose graphs exercise fusion, reductions, mixed dtypes, NumPy calls between kernels
# and returned inputs (each distinct kernel costs a numba compile, so not all 98).
CHOSEN = {
    "arith", "scalars", "integer_ops", "comparisons", "unary_math", "max_min_where_clip",
    "gelu", "softmax", "layernorm", "reductions", "bool_reductions", "mlp_forward", "astypes",
    "returns_input", "returns_same_twice", "numpy_scalar_args", "numpy_constants",
    "cross_entropy", "logistic_loss", "adam_functional", "heat_equation_steps", "mixed_dtypes",
    "nep50_promotion", "power_forms", "where_chain", "logical_ops", "attention",
}
CASES = [p for p in PROGRAMS if p[0].rsplit("-", 1)[0] in CHOSEN]


def test_chosen_programs_exist():
    assert {name.rsplit("-", 1)[0] for name, _fn, _f in CASES} == CHOSEN


@pytest.mark.parametrize("name,fn,factory", CASES, ids=[p[0] for p in CASES])
def test_program_on_numba(name, fn, factory):
    args = factory()
    compiled = npdynamo.compile(fn, backend="numba", fullgraph=True)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        for _ in range(2):
            plain_args, comp_args = copy.deepcopy(args), copy.deepcopy(args)
            want = fn(*plain_args)
            got = compiled(*comp_args)
            assert_close(got, want)
            assert_close(comp_args, plain_args, "arguments after the call")
