"""Guards: every kind is checked for both outcomes, and a miss names what changed."""

import numpy as np
import pytest

import npdynamo
from npdynamo.backends import lookup_backend
from npdynamo.capture.compile_frame import build_entry
from tests.differential import CountingBackend, assert_compiled, assert_same_value

EAGER = lookup_backend("eager")
G_SCALE = 2.0
G_TABLE = {"a": 1.0}


def entry_for(fn, *args):
    return build_entry(fn, args, backend=EAGER)


def f_array(x):
    return x * 2


def f_const(x, n):
    return x * n


def f_global(x):
    return x * G_SCALE


def f_list(x, items):
    return x * len(items)


def f_dict(x, d):
    return x + d["a"]


def f_module_fn(x):
    return np.exp(x)


class Obj:
    def __init__(self, k):
        self.k = k


def f_attr(x, obj):
    return x * obj.k


def f_tuple(x, t):
    return x * t[0]


CASES = [
    # (function, capture args, args that pass, args that fail, expected reason fragment)
    (f_array, (np.ones(3),), (np.zeros(3),), (np.ones(4),), "x.shape[0]: expected 3, got 4"),
    (
        f_array,
        (np.ones(3),),
        (np.zeros(3),),
        (np.ones(3, np.float32),),
        "x.dtype: expected float64, got float32",
    ),
    (
        f_array,
        (np.ones(3),),
        (np.zeros(3),),
        ([1.0, 2.0, 3.0],),
        "type(x): expected ndarray, got list",
    ),
    (f_array, (np.ones((2, 3)),), (np.zeros((2, 3)),), (np.ones(6),), "x.ndim: expected 2, got 1"),
    (f_const, (np.ones(3), 2), (np.zeros(3), 2), (np.ones(3), 3), "n: expected 2, got 3"),
    (f_const, (np.ones(3), 2), (np.zeros(3), 2), (np.ones(3), 2.0), "n: expected 2, got 2.0"),
    (
        f_list,
        (np.ones(3), [1, 2]),
        (np.ones(3), [5, 6]),
        (np.ones(3), [1, 2, 3]),
        "len(items): expected 2, got 3",
    ),
    (
        f_dict,
        (np.ones(3), {"a": 1.0}),
        (np.ones(3), {"b": 2.0, "a": 1.0}),  # only d['a'] is read: other keys do not matter
        (np.ones(3), {"b": 1.0}),
        "d: the key 'a' is missing",
    ),
    (
        f_attr,
        (np.ones(3), Obj(2.0)),
        (np.ones(3), Obj(2.0)),
        (np.ones(3), Obj(3.0)),
        "obj.k: expected 2.0, got 3.0",
    ),
    (
        f_tuple,
        (np.ones(3), (2.0,)),
        (np.ones(3), (2.0,)),
        (np.ones(3), (2.0, 1.0)),
        "len(t): expected 1, got 2",
    ),
]


@pytest.mark.parametrize("fn,capture,ok,bad,reason", CASES)
def test_guard_both_outcomes(fn, capture, ok, bad, reason):
    entry = entry_for(fn, *capture)
    assert entry.check(*capture)
    assert entry.check(*ok)
    assert not entry.check(*bad)
    assert reason in entry.miss_reason(*bad)
    assert "test_guards.py" in entry.miss_reason(*bad)


def test_global_value_guard(monkeypatch):
    entry = entry_for(f_global, np.ones(2))
    assert entry.check(np.ones(2))
    monkeypatch.setitem(globals(), "G_SCALE", 3.0)
    assert not entry.check(np.ones(2))
    assert "G_SCALE: expected 2.0, got 3.0" in entry.miss_reason(np.ones(2))


def test_global_identity_guard(monkeypatch):
    entry = entry_for(f_module_fn, np.ones(2))
    assert entry.check(np.ones(2))
    monkeypatch.setitem(globals(), "np", type("FakeNumpy", (), {"exp": staticmethod(abs)}))
    assert not entry.check(np.ones(2) if False else __import__("numpy").ones(2))
    assert "np: expected the object seen at capture" in entry.miss_reason(
        __import__("numpy").ones(2)
    )


def test_one_generated_guard_function():
    entry = entry_for(f_attr, np.ones(3), Obj(2.0))
    source = entry.guard_set.source
    assert source.count("def check(") == 1
    # cheap type checks come before the dtype and shape checks
    assert source.index("type(a0) is") < source.index(".dtype is")
    # (a one-dimensional array's shape is its rank and length: ``len`` builds no tuple)
    assert source.index(".dtype is") < source.index("a0.ndim == 1 and len(a0) == 3")


def test_guards_do_not_keep_user_data_alive():
    import gc
    import weakref

    class Holder:
        pass

    holder = Holder()
    holder.k = 2.0
    ref = weakref.ref(holder)
    entry = entry_for(f_attr, np.ones(3), holder)
    del holder
    gc.collect()
    assert ref() is None
    assert entry.guard_set.describe()


def recompiles(fn, first, second):
    backend = CountingBackend()
    compiled = npdynamo.compile(fn, backend=backend)
    compiled(*first)
    compiled(*first)
    assert backend.count == 1, "a second call with equal inputs must not capture again"
    compiled(*second)
    return backend.count


@pytest.mark.parametrize(
    "fn,first,second",
    [
        (f_array, (np.ones(3),), (np.ones(4),)),
        (f_array, (np.ones(3),), (np.ones(3, np.float32),)),
        (f_const, (np.ones(3), 2), (np.ones(3), 5)),
        (f_list, (np.ones(3), [1]), (np.ones(3), [1, 2])),
        (f_dict, (np.ones(3), {"a": 1.0}), (np.ones(3), {"b": 1.0, "a": 3.0})),
        (f_attr, (np.ones(3), Obj(1.0)), (np.ones(3), Obj(4.0))),
    ],
)
def test_change_recaptures(fn, first, second):
    assert recompiles(fn, first, second) == 2


def test_global_change_recaptures(monkeypatch):
    backend = CountingBackend()
    compiled = npdynamo.compile(f_global, backend=backend)
    np.testing.assert_array_equal(compiled(np.ones(2)), np.ones(2) * 2.0)
    monkeypatch.setitem(globals(), "G_SCALE", 5.0)
    np.testing.assert_array_equal(compiled(np.ones(2)), np.ones(2) * 5.0)
    assert backend.count == 2


def test_straight_line_is_one_graph_and_normalised():
    backend = CountingBackend()

    def f(x, y):
        return x + y, np.add(x, y), x.__add__(y), np.add(x, y, out=None)

    results = npdynamo.compile(f, backend=backend)(np.ones(3), np.ones(3))
    assert backend.count == 1
    # the four spellings are one canonical op, merged by CSE into one node; the four results
    # are still four distinct arrays, as in Python
    assert backend.op_names() == ["add", "copy", "copy", "copy"]
    assert len({id(r) for r in results}) == 4


def test_cache_size_limit_runs_only(monkeypatch):
    monkeypatch.setattr(npdynamo.config, "cache_size_limit", 2)
    monkeypatch.setattr(npdynamo.config, "automatic_dynamic_shapes", False)  # n recompiles
    backend = CountingBackend()
    compiled = npdynamo.compile(f_const, backend=backend)
    compiled(np.ones(2), 1)
    compiled(np.ones(2), 2)
    with pytest.warns(Warning) as record:
        out = compiled(np.ones(2), 3)
        np.testing.assert_array_equal(out, np.ones(2) * 3)
        compiled(np.ones(2), 4)
    assert backend.count == 2
    texts = [str(w.message) for w in record]
    assert len(texts) == 1
    assert "f_const" in texts[0] and "cache_size_limit" in texts[0]
    assert "n: expected" in texts[0]
    # entries captured before the limit still serve
    np.testing.assert_array_equal(compiled(np.ones(2), 1), np.ones(2))
    assert backend.count == 2


def test_failing_backend_falls_back_to_eager_with_one_warning():
    from npdynamo.backends.compile import BackendFallbackWarning

    def broken_backend(gm, example_inputs):
        raise RuntimeError("no compiler here")

    compiled = npdynamo.compile(f_array, backend=broken_backend)
    with pytest.warns(BackendFallbackWarning, match="broken_backend failed") as record:
        np.testing.assert_array_equal(compiled(np.ones(3)), np.ones(3) * 2)
        np.testing.assert_array_equal(compiled(np.ones(3)), np.ones(3) * 2)
    assert len(record) == 1


class _Layer:
    def __init__(self, n):
        self.w = np.full((n, n), 0.5)
        self.b = np.zeros(n)


class _Net:
    def __init__(self, n, depth):
        self.layers = [_Layer(n) for _ in range(depth)]


def f_net(net, x):
    for layer in net.layers:
        x = np.tanh(x @ layer.w + layer.b)
    return x


def test_a_chain_read_by_several_guards_is_walked_once_and_every_change_still_misses():
    entry = entry_for(f_net, _Net(3, 2), np.ones(3))
    source = entry.guard_set.source
    assert source.count(".layers") == 1 and source.count(".w") == 2  # each chain read once
    assert entry.guard_set.check(_Net(3, 2), np.ones(3))
    changed = [_Net(3, 3), _Net(4, 2), _Net(3, 2), _Net(3, 2), _Net(3, 2)]
    changed[2].layers[1].w = changed[2].layers[1].w.astype(np.float32)
    changed[3].layers[0].b = [0.0, 0.0, 0.0]
    del changed[4].layers[1].w  # a missing attribute is a miss, not an error
    for net in changed:
        assert not entry.guard_set.check(net, np.ones(3))


def add_in_place(x, y):
    x += 2.0 * y
    return x * 3.0 + x.ndim + x.size  # (the rank and size are constants of the graph)


def _one_dim_variants():
    """Arguments of ``add_in_place`` that change one fact its guards check (each made anew
    per call: a copy would lose the layout and the aliasing)."""
    return {
        "seen": lambda: (np.arange(4.0), np.ones(4)),
        "length": lambda: (np.arange(5.0), np.ones(5)),
        "rank": lambda: (np.arange(4.0).reshape(4, 1).copy(), np.ones((4, 1))),
        "rank, same length": lambda: (np.arange(8.0).reshape(4, 2).copy(), np.ones((4, 2))),
        "0-d": lambda: (np.array(4.0), np.array(1.0)),
        "dtype": lambda: (np.arange(4, dtype=np.float32), np.ones(4, np.float32)),
        "layout": lambda: (np.arange(8.0)[::2], np.ones(8)[1::2]),
        "aliased": lambda: (lambda a: (a, a))(np.arange(4.0)),
        "overlapping": lambda: (lambda a: (a[:4], a[1:]))(np.arange(5.0)),
        "subclass": lambda: (np.arange(4.0).view(np.matrix)[0], np.ones(4)),
    }


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_each_fact_of_a_one_dimensional_array_still_misses_when_it_changes(backend,
                                                                           monkeypatch):
    """After warm-up on 1-D float64 arrays of length 4, every argument that changes a fact
    the guards check (length, rank, dtype, aliasing, type) or that the warm path checks
    (layout) gives Python's result and leaves the arguments as Python leaves them."""
    monkeypatch.setattr(npdynamo.config, "cache_size_limit", 32)  # every variant compiled
    npdynamo.reset()
    compiled = npdynamo.compile(add_in_place, backend=backend)
    variants = _one_dim_variants()
    for name in ["seen", "seen", *variants, "seen"]:
        plain_args, comp_args = variants[name](), variants[name]()
        try:
            want, want_exc = add_in_place(*plain_args), None
        except Exception as exc:  # (a 0-d array's in-place add of a 0-d one is fine)
            want, want_exc = None, exc
        try:
            got, got_exc = compiled(*comp_args), None
        except Exception as exc:
            got, got_exc = None, exc
        assert type(got_exc) is type(want_exc), (name, got_exc, want_exc)
        assert_same_value(want, got, f"{name}: result")
        assert_same_value(list(plain_args), list(comp_args), f"{name}: args after the call")
    assert_compiled(compiled)
    assert all(entry.runs_python is None for entry in npdynamo.inspect(compiled).entries
               if entry.graph_break is None)


# -- a container's type guard runs before the guards that read its items ------------------
class LoggedList(list):
    """A list whose item reads are counted: Python's ``for`` over it does not call them."""

    reads = 0

    def __getitem__(self, i):
        LoggedList.reads += 1
        return list.__getitem__(self, i)


def _halve(v):
    return v * 0.5


STAGES = [_halve, _halve]


def run_stages(x):
    for stage in STAGES:
        x = stage(x)
    return x


def test_a_container_replaced_by_a_user_object_is_not_indexed_by_the_guards():
    global STAGES
    x = np.arange(3.0)
    compiled = npdynamo.compile(run_stages)
    assert_same_value(run_stages(x), compiled(x))
    saved, STAGES = STAGES, LoggedList([_halve, np.negative])
    try:
        LoggedList.reads = 0
        expected = run_stages(x)
        assert LoggedList.reads == 0  # (Python iterates it without __getitem__)
        assert_same_value(expected, compiled(x))
        # the function guards on STAGES[0] and STAGES[1] came after its type guard, which
        # failed first: no user __getitem__ ran in a guard
        assert LoggedList.reads == 0
    finally:
        STAGES = saved
