"""Side effects, plain vs compiled: results and the full state of every argument and global
after each of several calls; mutated arrays keep their identity and memory."""

import contextlib
import copy
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npdynamo
from tests.capture import mutation_programs as mp
from tests.differential import assert_same_value, run_capturing_stdout


def snapshot_globals():
    return {name: copy.deepcopy(getattr(mp, name)) for name in mp.GLOBAL_NAMES}


def restore_globals(state):
    for name, value in state.items():
        setattr(mp, name, copy.deepcopy(value))


def check_state(fn, factory, calls=3):
    """Run ``fn`` plain and compiled ``calls`` times each on copies of the same arguments (each
    side keeps mutating its own copies) and compare everything after every call."""
    start = snapshot_globals()
    # each side gets its own objects from the (deterministic) factory: deepcopy would share
    # closures and their cells between the two runs
    plain_args = factory()
    comp_args = factory()
    compiled = npdynamo.compile(fn)
    plain_results, comp_results = [], []
    plain_globals, comp_globals = [], []
    restore_globals(start)
    for _ in range(calls):
        plain_results.append(run_capturing_stdout(fn, plain_args, {}))
        plain_globals.append(snapshot_globals())
    restore_globals(start)
    for _ in range(calls):
        comp_results.append(run_capturing_stdout(compiled, comp_args, {}))
        comp_globals.append(snapshot_globals())
    restore_globals(start)
    for (pr, pe, pout), (cr, ce, cout) in zip(plain_results, comp_results):
        if pe is not None:
            assert ce is not None and type(ce) is type(pe) and str(ce) == str(pe), (pe, ce)
        else:
            assert ce is None, ce
            assert_same_value(pr, cr)
        assert pout == cout
    assert_same_value(plain_args, comp_args, "arguments after the calls")
    assert_same_value(plain_globals, comp_globals, "globals after each call")


@pytest.mark.parametrize(
    "name,fn,factory", mp.MUTATION_PROGRAMS, ids=[p[0] for p in mp.MUTATION_PROGRAMS]
)
def test_mutation_program(name, fn, factory):
    check_state(fn, factory)


def test_enough_programs():
    assert len({id(fn) for _n, fn, _f in mp.MUTATION_PROGRAMS}) >= 50


def test_mutated_arrays_keep_identity_and_memory():
    p, g = mp.params(), mp.params(5)
    w, b = p["w"], p["b"]
    view = w[0]
    expected = w - 0.1 * g["w"]
    npdynamo.compile(mp.sgd_dict)(p, g, 0.1)
    assert p["w"] is w and p["b"] is b
    assert np.shares_memory(view, p["w"])
    np.testing.assert_array_equal(p["w"], expected)
    np.testing.assert_array_equal(view, expected[0])


def test_aliased_argument_is_guarded():
    from tests.differential import CountingBackend

    backend = CountingBackend()
    compiled = npdynamo.compile(mp.aliased_arguments, backend=backend)
    x = np.ones(3)
    np.testing.assert_array_equal(compiled(x, x), np.full(3, 4.0))
    y, z = np.ones(3), np.ones(3)
    np.testing.assert_array_equal(compiled(y, z), np.full(3, 2.0))  # not aliased now
    np.testing.assert_array_equal(y, np.full(3, 2.0))
    assert backend.count == 2


def test_graph_error_leaves_data_as_python_would():
    def f(x, y):
        x += 1
        return x[y]  # an index out of bounds found only at run time

    compiled = npdynamo.compile(f)
    compiled(np.ones(3), np.array([0]))  # captured with a valid index
    x_compiled, x_plain = np.ones(3), np.ones(3)
    with pytest.raises(IndexError) as compiled_error:
        compiled(x_compiled, np.array([7]))
    with pytest.raises(IndexError) as plain_error:
        f(x_plain, np.array([7]))
    assert str(compiled_error.value) == str(plain_error.value)
    # the graph raised before any write-back; the frame then ran in Python, which incremented
    # x before failing: the caller sees exactly Python's state, never a half-applied write
    np.testing.assert_array_equal(x_compiled, x_plain)


def test_graph_error_in_a_broken_frame_leaves_data_as_python_would():
    log = []

    def f(x, y, log):
        log.append("start")
        x *= 2
        return x[y]

    compiled = npdynamo.compile(f)
    compiled(np.ones(3), np.array([0]), [])
    x_compiled, x_plain, log_plain = np.ones(3), np.ones(3), []
    with pytest.raises(IndexError):
        compiled(x_compiled, np.array([9]), log)
    with pytest.raises(IndexError):
        f(x_plain, np.array([9]), log_plain)
    np.testing.assert_array_equal(x_compiled, x_plain)
    assert log == log_plain


def test_counter_attribute_recaptures_but_history_does_not():
    from tests.differential import CountingBackend

    backend = CountingBackend()
    model = mp.Model()
    compiled = npdynamo.compile(mp.history_append_graph_value, backend=backend)
    for _ in range(3):
        compiled(model, mp.a(5, 3))
    assert len(model.history) == 3 and model.step == 3
    # model.step is a guarded Python int: each new value is a new entry (like TorchDynamo);
    # the growing history list is never guarded on its length
    assert all(
        "len(model.history)" not in g
        for e in npdynamo.capture.hooks.compiled_entries(compiled)
        for g in e.guard_set.describe()
    )


# -- generated programs ----------------------------------------------------------------------------
STEPS = st.sampled_from(
    [
        "x += y",
        "x *= 1.5",
        "x[0] = y[1]",
        "x[1:] -= 1",
        "np.add(x, y, out=x)",
        "lst.append(x.sum())",
        "lst.append(2.5)",
        "d['k'] = x * 2",
        "d.pop('k', None)",
        "obj.n += 1",
        "obj.v = x.mean()",
        "y = y * 2",
        "x[::2] *= -1",
        "lst[:] = lst[-2:]",
    ]
)


def make_program(steps):
    body = "\n".join(f"    {s}" for s in steps) or "    pass"
    source = f"def prog(x, y, lst, d, obj):\n{body}\n    return x, y\n"
    scope = {"np": np}
    exec(compile(source, f"<mutation program {abs(hash(source))}>", "exec"), scope)
    return scope["prog"]


class Obj:
    def __init__(self):
        self.n = 0
        self.v = 0.0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEPS, min_size=1, max_size=6), st.integers(0, 10_000))
def test_random_mutation_sequences(steps, seed):
    prog = make_program(steps)

    def factory():
        rng = np.random.default_rng(seed)
        return (rng.standard_normal(4), rng.standard_normal(4), [1.0, 2.0], {"a": 1}, Obj())

    with contextlib.redirect_stdout(io.StringIO()):
        check_state(prog, factory, calls=3)


def _add_into(x, y):
    x += 1
    return y * 2


def test_alias_and_overlap_guards_both_outcomes():
    from npdynamo.backends import lookup_backend
    from npdynamo.capture.compile_frame import build_entry

    x = np.ones(3)
    same = build_entry(_add_into, (x, x), backend=lookup_backend("eager"))
    assert same.check(x, x)
    assert not same.check(np.ones(3), np.ones(3))
    assert "expected the same object as x" in same.miss_reason(np.ones(3), np.ones(3))
    apart = build_entry(_add_into, (np.ones(3), np.ones(3)), backend=lookup_backend("eager"))
    assert apart.check(np.ones(3), np.ones(3))
    base = np.ones(6)
    assert not apart.check(base[:3], base[1:4])
    assert "x: is now a view of another array" in apart.miss_reason(base[:3], base[1:4])
    same = np.ones(3)
    assert not apart.check(same, same)  # the same array twice
    assert "y: is now the same array as x" in apart.miss_reason(same, same)


def test_write_through_transposed_view_matches_numpy():
    def f(x):
        t = x.T
        t += 1  # NumPy writes through the view into x
        return x

    check_state(f, lambda: (np.arange(6.0).reshape(2, 3),))


def test_recompile_is_logged_with_the_failing_guard(caplog):
    import logging

    def g(x):
        return x + 1

    npdynamo.set_logs("recompiles")
    try:
        with caplog.at_level(logging.INFO, logger="npdynamo"):
            compiled = npdynamo.compile(g)
            compiled(np.ones(3))
            compiled(np.ones(4))
    finally:
        npdynamo.set_logs()
    assert "Recompiling function" in caplog.text
    assert "x.shape[0]: expected 3, got 4" in caplog.text


def three_from_one(x, y, z):
    n = len(x)
    xt, yt, zt = np.tile(x, (n, 1)), np.tile(y, (n, 1)), np.tile(z, (n, 1))
    dx, dy, dz = xt - xt.T, yt - yt.T, zt - zt.T  # one computation when x is y is z: CSE
    dy[dy > 1.0] = dy[dy > 1.0] - 2.0  # written in Python (reading a mask breaks the graph)
    dz[dz < -1.0] = dz[dz < -1.0] + 2.0
    return dx, dy, dz


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_results_merged_by_cse_stay_distinct_arrays_on_every_backend(backend):
    x = np.arange(0.0, 3.0, 0.5)
    for args in ((x, x, x), (x, x.copy(), x)):  # the same array passed three times, then twice
        expected = three_from_one(*(a.copy() for a in args))
        got = npdynamo.compile(three_from_one, backend=backend)(*args)
        for e, g in zip(expected, got):
            np.testing.assert_array_equal(g, e)
        assert not np.shares_memory(got[1], got[2])


def _update_items(params, lr):
    for k in params:
        params[k] -= lr * params[k]
    return params


def _swap_and_restore(d, other):
    kept = d["w"]
    d["w"] = other
    d["w"] -= 1.0  # writes `other` in place
    d["w"] = kept  # the slot was written since `kept` was read: this store is real
    kept -= 2.0
    d["w"] = kept  # stores back what the slot now holds (same object, slot untouched since)
    return d


def _clear_and_restore(d):
    kept = d["w"]
    d.clear()
    d["w"] = kept
    return d


@pytest.mark.parametrize("fn, make", [
    (_update_items, lambda: ({"w": np.ones(3), "b": np.arange(2.0)}, 0.5)),
    (_swap_and_restore, lambda: ({"w": np.ones(3), "b": np.zeros(1)}, np.full(3, 7.0))),
    (_clear_and_restore, lambda: ({"b": np.zeros(1), "w": np.ones(3)},)),
])
def test_dict_item_stores_back_match_python(fn, make):
    plain_args, comp_args = make(), make()
    want = fn(*plain_args)
    compiled = npdynamo.compile(fn)
    got = compiled(*comp_args)
    assert_same_value(want, got)
    assert_same_value(plain_args, comp_args, "args after the call")
    assert list(got) == list(want)  # key order
    assert got["w"] is comp_args[0]["w"]


def test_an_item_updated_in_place_is_not_stored_back():
    from npdynamo.capture.hooks import compiled_entries

    compiled = npdynamo.compile(_update_items)
    params = {"w": np.ones(3), "b": np.arange(2.0)}
    ids = {k: id(v) for k, v in params.items()}
    compiled(params, 0.5)
    assert {k: id(v) for k, v in params.items()} == ids
    (entry,) = compiled_entries(compiled)
    assert "a0['w'] = " not in entry.run_source  # no store back into the dict
    assert "[...] = out[" in entry.run_source  # the arrays' new data is written into them


def _rebind_then_use_old(d, holder, other):
    inner = d["sub"]
    d["sub"] = {}
    inner["k"] = 1  # the dict read before the slot was rebound
    old = holder.attr
    holder.attr = other
    return inner, old


class _Holder:
    def __init__(self, value):
        self.attr = value


def test_values_from_outside_are_the_objects_read_before_any_store():
    def make():
        return {"sub": {"a": 0}}, _Holder(np.ones(2)), np.zeros(2)

    plain, comp = make(), make()
    want = _rebind_then_use_old(*plain)
    got = npdynamo.compile(_rebind_then_use_old)(*comp)
    assert_same_value(want, got)
    assert_same_value(plain[0], comp[0], "d after the call")
    assert got[0] is not comp[0]["sub"] and got[1] is not comp[1].attr
    np.testing.assert_array_equal(comp[1].attr, comp[2])


def test_a_few_owners_are_checked_inline_with_the_same_outcomes():
    """Up to ``INLINE_ARRAYS`` arrays, the owners guard is written out in the guard function
    (no call): every way it can fail still fails, with its reason."""
    from npdynamo.backends import lookup_backend
    from npdynamo.capture.compile_frame import build_entry

    apart = build_entry(_add_into, (np.ones(3), np.ones(3)), backend=lookup_backend("eager"))
    assert ".base is None" in apart.guard_set.source and "OWN" not in apart.guard_set.source
    assert apart.check(np.ones(3), np.ones(3))
    read_only = np.ones(3)
    read_only.flags.writeable = False
    assert not apart.check(read_only, np.ones(3))
    assert "x: is now read-only" in apart.miss_reason(read_only, np.ones(3))
    assert apart.check(np.ones(3), read_only)  # y is only read
