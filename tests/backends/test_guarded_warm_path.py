"""The warm path of a whole graph's function (``loop_program.GraphCall``) after the guards.

The entry's guards test each frame argument's type, dtype and shape before the graph runs
(``capture/entry.mark_guarded_inputs`` hands that to the backend as ``GuardedInput``), so the
warm path tests only what they do not cover: NumPy's error state and the flags numba's typing
depends on (layout, alignment, writeability). It is the code of the function the entry calls
(``GraphCall.forward``): a warm call is the dispatcher, the guards, the entry's runner and that
function, three frames deep. Arguments the warm path does not take after warm-up (other
layouts, read-only, another dtype or rank) stay exact: the general path, the graph's program,
or a new capture. Differential: plain against compiled on the same arguments (the kernels
do not write their arguments; each is checked unchanged afterwards).
"""

from __future__ import annotations

import contextvars
import gc
import sys

import numpy as np
import pytest

import npdynamo as nd
from benchmarks.loop_kernels import KERNELS as CORPUS
from benchmarks.loop_kernels import crc16, lu_doolittle
from npdynamo.backends.numba.loop_program import GraphCall
from tests.backends.compare import assert_close
from tests.backends.test_loop_program import loop_records
from tests.differential import assert_compiled, assert_same_value, run_both

RNG = np.random.default_rng(31)
WARM = 4


@pytest.fixture(autouse=True)
def _no_tuning(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")  # the compiled form runs from the first call


def graph_call(compiled) -> GraphCall:
    """The one whole graph's function behind ``compiled`` (its record ran)."""
    (record,) = [r for r in loop_records(compiled) if r.op == "whole graph" and r.runs]
    (call,) = [o for o in gc.get_objects() if type(o) is GraphCall and o.record is record]
    return call


def warmed(fn, *args):
    nd.reset()
    compiled = nd.compile(fn, backend="numba")
    for _ in range(WARM):
        run = run_both(fn, compiled, args, {})
        assert_close(run.got, run.expected)
    assert_compiled(compiled, graphs=1, breaks=0)
    return compiled, graph_call(compiled)


def scaled_rows(holder, scale):
    """A loop with work around it, over an array read from an attribute (no frame argument)."""
    A = holder.A
    n = A.shape[0]
    out = np.zeros(n)
    for i in range(n):
        s = 0.0
        for j in range(i):
            s += A[i, j] * scale
        out[i] = s
    return out


class Holder:
    def __init__(self, A) -> None:
        self.A = A


# (at the corpus's small sizes: its loops form there; smaller ones may be unrolled)
KERNELS = {k.plain.__name__: (k.plain, lambda k=k: k.make("small", RNG))
           for k in CORPUS if k.plain.__name__ in ("lu_doolittle", "crc16", "nussinov")}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_what_the_guards_prove_is_not_tested_again(name):
    fn, make = KERNELS[name]
    compiled, call = warmed(fn, *make())
    source = call.run.__npdynamo_source__
    assert call.forward.__code__ is call.run.__code__, "forward is not the warm path"
    condition = source.splitlines()[1]
    # (C-ordered, aligned and writeable: ``flags.carray``, the one test of the flags left)
    assert "flags.carray" in condition and "errstate" in condition, source
    assert "type(" not in condition and "dtype" not in condition and "ndim" not in condition, \
        source


def test_an_array_read_from_an_attribute_keeps_its_tests():
    """The runner reads ``holder.A`` again after the guards (a property could give another
    object): no ``GuardedInput`` for it, so the warm path tests it in full."""
    compiled, call = warmed(scaled_rows, Holder(RNG.random((24, 24))), 0.5)
    condition = call.run.__npdynamo_source__.splitlines()[1]
    assert "type(" in condition and "dtype is" in condition and "ndim ==" in condition, condition
    assert condition.count("type(") == 1  # (``scale`` is a frame argument: guarded)


def python_calls(fn, *args, restored: bool = False) -> tuple[list[str], int]:
    """The Python functions one call of ``fn`` runs (not builtins, nor numba's own: its
    machine code boxing a new array calls ``numba.core.serialize``) and its deepest frame.
    ``restored``: under an error state that ``np.seterr(**old)`` put back (equal to the
    default, another object), after one call under it."""
    names, depth, deepest = [], 0, 0

    def profile(frame, event, arg):
        nonlocal depth, deepest
        if event == "call" and "numba" in frame.f_code.co_filename.split("/"):
            depth += 1
        elif event == "call":
            names.append(frame.f_code.co_name)
            depth += 1
            deepest = max(deepest, depth)
        elif event == "return":
            depth -= 1

    def call() -> None:
        if restored:
            np.seterr(**np.seterr(all="raise"))
            fn(*args)
        sys.setprofile(profile)
        try:
            fn(*args)
        finally:
            sys.setprofile(None)

    # in a fresh context, whose NumPy error state is the default object itself (another test's
    # ``np.seterr`` stays in the context it ran in)
    contextvars.Context().run(call)
    return names, deepest


@pytest.mark.parametrize("restored", [False, True], ids=["default", "restored"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_warm_call_is_the_dispatcher_guards_runner_and_warm_path(name, restored):
    # restored: ``np.seterr(**old)`` gives a state equal to the default in another object; the
    # warm path, which tested identity with the default, took its general path for good
    fn, make = KERNELS[name]
    args = make()
    compiled, call = warmed(fn, *args)
    runs = call.record.runs
    names, deepest = python_calls(compiled, *args, restored=restored)
    assert names == [fn.__name__, "check", "run", "run"], names
    assert deepest == 3  # (the machine code's numba frames below)
    assert call.record.runs == runs + 1 + restored


def outcome(fn, *args) -> tuple:
    """What ``fn(*args)`` gives: ``(value, None)``, or ``(None, exception)`` where it raises."""
    try:
        return fn(*args), None
    except Exception as exc:
        return None, exc


def unaligned(a):
    """A writeable copy of ``a`` whose data starts one byte past an aligned address."""
    buffer = np.zeros(a.nbytes + 1, np.uint8)
    out = buffer[1:].view(a.dtype).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned
    return out


def _variants(A):
    big = np.zeros((2 * A.shape[0], 2 * A.shape[1]))
    big[::2, ::2] = A
    read_only = A.copy()
    read_only.flags.writeable = False
    swapped = A.astype(A.dtype.newbyteorder())
    return {
        "unaligned": unaligned(A),           # same guards, aligned bit off (numba ignores it)
        "fortran": np.asfortranarray(A),     # same guards, another numba layout
        "strided": big[::2, ::2],            # same guards, not contiguous
        "read-only": read_only,              # same guards, another numba type
        "float32": A.astype(np.float32),     # another dtype: a new capture
        "byteswapped": swapped,              # not native: a new capture, no numba typing
        "int64": (A * 100).astype(np.int64),
        "rank 3": A[None],                   # another rank: a new capture (which raises)
    }


@pytest.mark.parametrize("backend", ["eager", "numba"])
@pytest.mark.parametrize("variant", sorted(_variants(np.eye(2))))
def test_other_layouts_and_dtypes_after_warm_up_stay_exact(backend, variant):
    (A,) = KERNELS["lu_doolittle"][1]()
    nd.reset()
    compiled = nd.compile(lu_doolittle, backend=backend)
    for _ in range(WARM):
        compiled(A)
    call = graph_call(compiled) if backend == "numba" else None
    x = _variants(A)[variant]
    before = x.copy()
    want, want_exc = outcome(lu_doolittle, x)
    for _ in range(2):  # the general path, then the warm path's second look
        got, got_exc = outcome(compiled, x)
        assert type(got_exc) is type(want_exc) and str(got_exc) == str(want_exc)
        if want_exc is None:
            if backend == "eager":
                assert_same_value(want, got)
            else:
                assert_close(got, want)
        np.testing.assert_array_equal(x, before)
        assert x.flags.writeable == (variant != "read-only")
    # the C-ordered array still takes the warm path
    if call is not None:
        runs = call.record.runs
        assert_close(compiled(A), lu_doolittle(A))
        assert call.record.runs == runs + 1


@pytest.mark.parametrize("state", ["raise", "ignore"])
def test_a_users_errstate_after_warm_up_is_numpys(state):
    (A,) = KERNELS["lu_doolittle"][1]()
    compiled, call = warmed(lu_doolittle, A)
    zero = A.copy()
    zero[0, 0] = 0.0  # a zero pivot: divisions by zero
    runs = call.record.runs
    with np.errstate(divide=state, invalid=state):
        run = run_both(lu_doolittle, compiled, (zero,), {})
    if state == "raise":
        assert isinstance(run.exc, FloatingPointError)
    else:
        assert_same_value(run.expected, run.got)  # (the eager backend ran it)
    assert call.record.runs == runs  # the program ran it, not the warm path


def _one_dim_variants(data):
    read_only = data.copy()
    read_only.flags.writeable = False
    return {
        "strided": np.repeat(data, 2)[::2],       # same guards, not contiguous
        "read-only": read_only,                   # same guards, another numba type
        "unaligned": unaligned(data),             # same guards, aligned bit off
        "a view": np.concatenate([data, data])[:len(data)],  # C-ordered view: the warm path
        "int32": data.astype(np.int32),           # another dtype: a new capture
        "longer": np.concatenate([data, data[:1]]),  # another length: a new capture
        "rank 2": data[:, None].copy(),           # another rank, same length: a new capture
    }


@pytest.mark.parametrize("variant", sorted(_one_dim_variants(np.arange(3))))
def test_other_one_dimensional_arrays_after_warm_up_stay_exact(variant):
    """The CRC's 1-D argument, C- and F-contiguous at warm-up: each variant gives Python's
    result (the warm path's ``flags.carray`` and the guards' rank and length decide which
    way it goes) and the C-ordered array still takes the warm path afterwards."""
    (data,) = KERNELS["crc16"][1]()
    compiled, call = warmed(crc16, data)
    x = _one_dim_variants(data)[variant]
    before = x.copy()
    for _ in range(2):
        (want, want_exc), (got, got_exc) = outcome(crc16, x), outcome(compiled, x)
        assert type(got_exc) is type(want_exc) and str(got_exc) == str(want_exc)
        if want_exc is None:
            assert_same_value(want, got)
        np.testing.assert_array_equal(x, before)
    runs = call.record.runs
    assert_same_value(crc16(data), compiled(data))
    assert call.record.runs == runs + 1
