"""Compiled functions are objects that travel: pickle, cloudpickle, copy, and inlining.

A compiled function pickles as a reference when it is ``module.qualname`` (decorated), else as
its user function plus its settings; unpickled in another process it captures again there. Each
case is checked against the plain function on copies of the same input.
"""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.hooks import compiled_entries
from npdynamo.capture.hooks.compiled_function import CompiledFunction
from tests.capture import pickle_targets as targets
from tests.differential import assert_same_value

cloudpickle = pytest.importorskip("cloudpickle", reason="cloudpickle is in the test extra")

ROOT = Path(__file__).resolve().parents[2]
PICKLERS = {"pickle": pickle, "cloudpickle": cloudpickle}


def _x():
    return np.linspace(-1.0, 1.0, 7)


def _round_trip(pickler, obj):
    return pickle.loads(pickler.dumps(obj))


@pytest.mark.parametrize("pickler", PICKLERS)
@pytest.mark.parametrize("called_first", [False, True])
def test_decorated_function_pickles_as_a_reference(pickler, called_first):
    if called_first:
        targets.decorated(_x())
    assert _round_trip(PICKLERS[pickler], targets.decorated) is targets.decorated


@pytest.mark.parametrize("pickler", PICKLERS)
@pytest.mark.parametrize("called_first", [False, True])
@pytest.mark.parametrize("name", ["assigned", "assigned_numba"])
def test_assigned_function_pickles_as_its_function_and_settings(pickler, called_first, name):
    compiled = getattr(targets, name)
    if called_first:
        compiled(_x())
    again = _round_trip(PICKLERS[pickler], compiled)
    assert isinstance(again, CompiledFunction)
    assert again.__wrapped__ is targets.plain
    assert again._npdynamo_settings == compiled._npdynamo_settings
    assert _round_trip(PICKLERS[pickler], compiled) is again  # one per process, not per load
    x = _x()
    assert_same_value(targets.plain(x.copy(), 0.5), again(x, 0.5))
    assert len(compiled_entries(again)) >= 1


def test_settings_travel_by_value():
    again = _round_trip(pickle, targets.assigned_numba)
    assert again._npdynamo_settings == ("numba", True, False)


@pytest.mark.parametrize("pickler", PICKLERS)
def test_bound_compiled_method_pickles_with_its_object(pickler):
    model = targets.Model(3.0)
    method = _round_trip(PICKLERS[pickler], model.forward)
    x = _x()
    assert_same_value(np.tanh(x * 3.0), method(x))


def test_copy_and_deepcopy_give_the_same_function():
    assert copy.copy(targets.assigned) is targets.assigned
    assert copy.deepcopy(targets.assigned) is targets.assigned
    assert copy.deepcopy({"f": targets.decorated})["f"] is targets.decorated


def test_local_compiled_function_fails_as_a_local_function_does():
    def local(x):
        return x + 1

    with pytest.raises(Exception) as plain_error:
        pickle.dumps(local)
    with pytest.raises(type(plain_error.value)):
        pickle.dumps(npdynamo.compile(local))
    again = _round_trip(cloudpickle, npdynamo.compile(local))  # cloudpickle moves it by value
    assert again(np.arange(3)).tolist() == [1, 2, 3]


def _run(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


_LOAD_AND_CALL = """
    import pickle, sys
    import numpy as np
    from npdynamo.capture.hooks import compiled_entries
    for path in sys.argv[1:]:
        with open(path, "rb") as f:
            fn = pickle.load(f)
        with open(path, "rb") as f:
            same = pickle.load(f) is fn
        x = np.linspace(-1.0, 1.0, 7)
        result = fn(x)
        print(repr(result.tolist()), len(compiled_entries(fn)), same)
"""


@pytest.mark.parametrize("pickler", PICKLERS)
def test_unpickled_in_another_process_it_captures_there(pickler, tmp_path):
    paths = []
    for name in ("decorated", "assigned", "assigned_numba"):
        compiled = getattr(targets, name)
        compiled(_x())  # entries here must not travel
        path = tmp_path / f"{name}.pkl"
        path.write_bytes(PICKLERS[pickler].dumps(compiled))
        paths.append(str(path))
    lines = _run(_LOAD_AND_CALL, *paths).splitlines()
    expected = repr(targets.plain(_x()).tolist())
    for line in lines:
        result, entries, same = line.rsplit(" ", 2)
        assert result == expected and entries == "1" and same == "True"


def test_functions_from_main_travel_by_value_with_cloudpickle(tmp_path):
    out = tmp_path / "main.pkl"
    _run(
        """
        import pickle, sys
        import cloudpickle
        import numpy as np
        import npdynamo

        @npdynamo.compile
        def decorated(x):
            return np.cos(x) * 3.0

        def plain(x):
            return np.cos(x) * 3.0

        assigned = npdynamo.compile(plain)
        x = np.linspace(-1.0, 1.0, 7)
        for fn in (decorated, assigned):
            fn(x)
        # in this process pickle finds the decorated one by reference, as a plain function
        assert pickle.loads(pickle.dumps(decorated)) is decorated
        with open(sys.argv[1], "wb") as f:
            f.write(cloudpickle.dumps(decorated))
        with open(sys.argv[2], "wb") as f:
            f.write(cloudpickle.dumps(assigned))
        """,
        str(out) + ".decorated", str(out) + ".assigned",
    )
    lines = _run(_LOAD_AND_CALL, str(out) + ".decorated", str(out) + ".assigned").splitlines()
    expected = repr((np.cos(_x()) * 3.0).tolist())
    assert [line.rsplit(" ", 2) for line in lines] == [[expected, "1", "True"]] * 2


def test_dask_example_captures_once_per_worker_and_shares_the_kernel_cache(tmp_path):
    pytest.importorskip("distributed", reason="Dask's distributed scheduler is in the test extra")
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "dask_map.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "NPDYNAMO_CACHE_DIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    workers = [line for line in done.stdout.splitlines() if line.startswith("worker")]
    assert len(workers) == 2
    for line in workers:
        assert "1 entry, kernels compiled: 0, loaded from disk: " in line
        assert not line.endswith("loaded from disk: 0")
    error = float(done.stdout.rsplit("plain NumPy: ", 1)[1])
    assert error < 1e-12


def test_compiled_methods_and_functions_inline_into_compiled_callers():
    model = targets.Model(2.0)

    def through_method(model, x):
        return (model.forward(x) ** 2).sum()

    def through_argument(fn, x):
        return (fn(x) ** 2).sum()

    x = _x()
    expected = (np.tanh(x * 2.0) ** 2).sum()
    for caller, callee in ((through_method, model), (through_argument, model.forward)):
        report = npdynamo.explain(caller)(callee, x.copy())
        assert (report.graph_count, report.graph_break_count) == (1, 0)
        assert_same_value(expected, npdynamo.compile(caller)(callee, x.copy()))


def test_a_bound_compiled_method_is_explained_and_a_compiled_call_binds():
    model = targets.Model(2.0)
    x = _x()
    report = npdynamo.explain(model.forward)(x.copy())
    assert (report.graph_count, report.graph_break_count) == (1, 0)
    assert_same_value(np.tanh(x * 2.0), report.result)

    class Shift:
        __call__ = npdynamo.compile(lambda self, v: v + 1.0)

    assert_same_value(x + 1.0, Shift()(x.copy()))
