"""``capture/dynamic_dims.py``: which input dimensions and Python numbers a capture makes
symbolic, asked directly per code object and source; then a small program over three batch
sizes. Dynamic shapes end to end (training steps, guards on relations, numba kernels reused)
are tested in ``test_dynamic_shapes.py`` and ``test_dynamic_scalars.py``."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo import config
from npdynamo.capture.dynamic_dims import (
    dynamic_dims,
    dynamic_scalar,
    forget,
    mark_dynamic,
    mark_static,
)
from npdynamo.errors import InvalidArgument
from tests.differential import check_same

_made = iter(range(10**6))


def _code():
    """A code object of its own (what was learnt is kept per code; code objects compare by
    their content, so each has another constant)."""
    return compile(f"x = {next(_made)}", "<dims>", "exec")


def test_dynamic_true_makes_every_dimension_of_two_or_more_symbolic():
    assert dynamic_dims(_code(), "x", np.zeros((4, 1, 0, 3)), True) == {0, 3}


def test_dynamic_false_never_learns():
    code = _code()
    for n in (3, 4, 5):
        assert dynamic_dims(code, "x", np.zeros((n, 2)), False) == frozenset()


def test_by_default_a_dimension_that_changed_is_symbolic_from_then_on():
    code = _code()
    assert dynamic_dims(code, "x", np.zeros((3, 5)), None) == frozenset()
    assert dynamic_dims(code, "x", np.zeros((3, 5)), None) == frozenset()
    assert dynamic_dims(code, "x", np.zeros((4, 5)), None) == {0}
    assert dynamic_dims(code, "x", np.zeros((3, 5)), None) == {0}  # kept, even back at 3
    assert dynamic_dims(code, "x", np.zeros((3, 6)), None) == {0, 1}
    assert dynamic_dims(code, "y", np.zeros((4, 5)), None) == frozenset()  # per source
    assert dynamic_dims(_code(), "x", np.zeros((4, 5)), None) == frozenset()  # per code


def test_another_number_of_dimensions_or_a_size_below_two_is_not_learnt():
    code = _code()
    dynamic_dims(code, "x", np.zeros((3, 5)), None)
    assert dynamic_dims(code, "x", np.zeros(7), None) == frozenset()
    assert dynamic_dims(code, "x", np.zeros((1, 5)), None) == frozenset()  # 0/1 specialise


def test_automatic_dynamic_shapes_off_is_static(monkeypatch):
    monkeypatch.setattr(config, "automatic_dynamic_shapes", False)
    code = _code()
    dynamic_dims(code, "x", np.zeros(3), None)
    assert dynamic_dims(code, "x", np.zeros(4), None) == frozenset()


def test_marks_win_over_the_mode():
    x = np.zeros((3, 4, 5))
    mark_dynamic(x, 0)
    mark_static(x, [-1])
    assert dynamic_dims(_code(), "x", x, False) == {0}
    assert dynamic_dims(_code(), "x", x, True) == {0, 1}
    mark_static(x, 0)  # the later mark replaces the earlier one
    assert dynamic_dims(_code(), "x", x, False) == frozenset()
    assert dynamic_dims(_code(), "x", np.zeros((3, 4, 5)), False) == frozenset()  # not x


@pytest.mark.parametrize("args", [([1, 2], 0), (np.zeros(3), 1), (np.zeros(3), "0")])
def test_a_bad_mark_names_the_callers_line(args):
    with pytest.raises(InvalidArgument, match="test_dynamic_dims.py:[0-9]+: npdynamo.mark_dyn"):
        mark_dynamic(*args)


def test_a_number_becomes_an_input_once_it_changed():
    code = _code()
    assert not dynamic_scalar(code, "lr", 0.1, None)
    assert not dynamic_scalar(code, "lr", 0.1, None)
    assert dynamic_scalar(code, "lr", 0.05, None)
    assert dynamic_scalar(code, "lr", 0.1, None)
    assert not dynamic_scalar(code, "lr", 0.1, False)
    assert dynamic_scalar(_code(), "lr", 3, True)
    assert not dynamic_scalar(_code(), "flag", True, True)  # bools are never inputs
    forget()
    assert not dynamic_scalar(code, "lr", 0.2, None)


def differences(x):
    return (x[1:] - x[:-1]) * 0.5


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_three_batch_sizes_are_two_graphs(backend):
    compiled = npdynamo.compile(differences, backend=backend)
    rng = np.random.default_rng(0)
    for rows, graphs in ((3, 1), (5, 2), (7, 2)):
        check_same(differences, rng.random((rows, 4)), compiled=compiled, graphs=graphs,
                   breaks=0)
