"""``ops.indexing``: the shape and errors of an index, as NumPy gives them: the rules of
``getitem`` and ``setitem`` against NumPy on the cases hypothesis found (``test_rules``)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ops.cases import Case
from tests.ops.test_rules import check_case


@pytest.mark.parametrize("name, args", [
    # index lists (values the rule sees) that broadcast to no element: NumPy checks none
    ("setitem", (np.zeros((1, 1), bool), ([], [1]), 0)),
    ("getitem", (np.zeros((1, 1)), ([], [1]))),
    ("getitem", (np.zeros((2, 3)), ([5], []))),
    # an int is checked whatever the lists select; a list selecting something is checked
    ("getitem", (np.zeros((1, 1)), ([], 1))),
    ("getitem", (np.zeros((3, 0)), ([5],))),
])
def test_the_rule_checks_the_index_values_numpy_checks(name, args):
    check_case(name, Case(args=args, kwargs={}, unsupported_ok=False))
