"""An op's ``defaults`` agree with its rule's and impl's signatures: the canonical form drops a
keyword equal to its default, so the rule and impl must supply that same default themselves
(``np.roll(x, 0)``, ``np.put_along_axis(..., None)`` and ``np.linalg.matrix_power`` once raised
a raw ``TypeError`` inside the rule and sent the whole frame to Python); those calls compile into
one graph with NumPy's results, and ``matrix_power(m, 1)`` (NumPy returns ``m`` itself) is refused
by export with a clear error naming the call."""

import inspect

import numpy as np
import pytest

import npdynamo
from npdynamo.ops import REGISTRY, REQUIRED
from tests.backends.compare import check_one_graph


def _keyword_defaults(fn) -> dict | None:
    """name -> default (``inspect.Parameter.empty`` when none) of ``fn``'s parameters, or None
    when the signature cannot tell (a builtin, ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    return {name: p.default for name, p in params.items()}


def test_a_dropped_default_is_the_rules_and_the_impls_own():
    wrong = []
    for name, op in sorted(REGISTRY.items()):
        for part in (op.rule, op.impl):
            found = _keyword_defaults(part)
            if found is None:
                continue
            for key, default in op.defaults.items():
                if key not in found:
                    wrong.append((name, part.__name__, key, "not a parameter"))
                elif default is not REQUIRED and found[key] is inspect.Parameter.empty:
                    # canonical kwargs drop it when equal to the default: the call lacks it
                    wrong.append((name, part.__name__, key, f"no default (op says {default!r})"))
    assert not wrong


def matrix_powers(m):
    return np.linalg.matrix_power(m, 3) + np.linalg.matrix_power(m, 0) * 2.0


def roll_by_zero(x):
    return np.roll(x, 0) * 2.0 + np.roll(x, 1)


def put_flat(a):
    a = a.copy()
    np.put_along_axis(a, np.array([0, 4]), np.array([5.0, 6.0]), None)
    return a * 2.0


@pytest.mark.parametrize("fn", [matrix_powers, roll_by_zero, put_flat],
                         ids=lambda f: f.__name__)
def test_calls_with_the_default_value_compile_into_one_graph(fn):
    check_one_graph(fn, (np.arange(9.0).reshape(3, 3),))  # eager and numba, fullgraph=True


def test_matrix_power_by_one_is_refused_by_export_with_a_clear_error():
    m = np.arange(9.0).reshape(3, 3)
    with pytest.raises(npdynamo.Unsupported, match=r"matrix_power\(a, 1\) returns a itself"):
        npdynamo.export(lambda a: np.linalg.matrix_power(a, 1), m)
