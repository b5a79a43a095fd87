"""np.random inside graphs: draws from a passed-in or global Generator/RandomState and the legacy
np.random.* functions give NumPy's numbers and leave every generator in NumPy's state after
every call, on eager and numba; guards never read the state; a graph that raises after a draw
draws nothing twice; draws Python code needs as numbers are exact graph breaks."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import npdynamo
from npdynamo.backends import compile as compile_module
from npdynamo.ops import REGISTRY
from npdynamo.ops.random import GeneratorMeta, bind_draw
from tests.differential import CountingBackend, assert_same_value
from tests.ops.test_rules import meta_of, to_metas

BACKENDS = ["eager", "numba"]
RNG = np.random.default_rng(11)  # a global generator the functions below draw from


def noise(x, rng):
    return x + rng.normal(0.0, 0.5, size=x.shape), rng.integers(0, 10, size=3)


def interleaved(x, a, b):
    u = a.random(3) + b.random(3)
    v = b.standard_normal((2, 3)) * a.uniform(-1, 1, size=3)
    return u, v + x[:3], a.exponential(2.0, size=2), b.choice(x, 2, replace=False)


def in_a_loop(x, rng):
    for _ in range(30):  # long enough to be rolled into an in-graph loop
        x = x * 0.9 + rng.standard_normal(x.shape)
    return x


def in_a_short_loop(x, rng):
    out = []
    for k in range(3):
        out.append(rng.poisson(k + 1.0, size=2) + x[k])
    return out


def global_generator(x):
    return x * RNG.random(x.shape), RNG.permutation(4)


def legacy_functions(x):
    return (np.random.rand(2, 3), np.random.randn(3) + x[:3], np.random.randint(0, 5, size=4),
            np.random.normal(1.0, 2.0, size=2), np.random.choice(x, 3))


def shuffles(x, rng):
    rng.shuffle(x)
    y = x.copy()
    rng.shuffle(y[1:])  # through a view
    return y, rng.permutation(x)


def unused_draw(x, rng):
    rng.random(5)  # only advances the state
    return x * 2


def python_number(x, rng):
    return x * rng.random(), rng.integers(5)


def raises_at_run_time(x, rng, idx):
    a = rng.normal(size=x.shape)
    return a + x[idx]  # idx's values are not known while capturing


def legacy_state(x, rs):
    return rs.rand(3) + x[:3], rs.randint(0, 9, size=2, dtype=np.int32), rs.standard_normal(2)


def _call(fn, x, seeds, legacy=False):
    make = np.random.RandomState if legacy else np.random.default_rng
    return fn(x.copy(), *(make(s) for s in seeds))


def _states(args):
    return [a.get_state(legacy=True)[1].tolist() if isinstance(a, np.random.RandomState)
            else a.bit_generator.state for a in args if not isinstance(a, np.ndarray)]


CASES = [
    (noise, 1), (interleaved, 2), (in_a_loop, 1), (in_a_short_loop, 1), (shuffles, 1),
    (unused_draw, 1), (legacy_state, "legacy"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, gens", CASES, ids=[c[0].__name__ for c in CASES])
def test_numbers_and_states_match_after_every_call(fn, gens, backend):
    legacy = gens == "legacy"
    count = 1 if legacy else gens
    make = np.random.RandomState if legacy else np.random.default_rng
    plain_gens = [make(10 + i) for i in range(count)]
    comp_gens = copy.deepcopy(plain_gens)
    compiled = npdynamo.compile(fn, backend=backend, fullgraph=True)
    for call in range(3):
        x = np.linspace(0.0, 1.0, 6)
        expected = fn(x.copy(), *plain_gens)
        got = compiled(x.copy(), *comp_gens)
        if backend == "eager":
            assert_same_value(expected, got)
        else:
            for e, g in zip(expected, got):
                np.testing.assert_allclose(g, e, rtol=1e-12)
        assert _states(comp_gens) == _states(plain_gens), f"call {call}"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [global_generator, legacy_functions])
def test_global_generators(fn, backend):
    compiled = npdynamo.compile(fn, backend=backend, fullgraph=True)
    for _ in range(3):
        x = np.linspace(0.0, 1.0, 6)
        saved = copy.deepcopy(RNG), np.random.get_state()
        expected = fn(x)
        after = RNG.bit_generator.state, np.random.get_state()[1].tolist()
        RNG.bit_generator.state = saved[0].bit_generator.state
        np.random.set_state(saved[1])
        got = compiled(x)
        assert_same_value(expected, got) if backend == "eager" else None
        assert (RNG.bit_generator.state, np.random.get_state()[1].tolist()) == after


def test_a_new_generator_object_needs_no_new_capture():
    backend = CountingBackend()
    compiled = npdynamo.compile(noise, backend=backend, fullgraph=True)
    for seed in range(5):
        assert_same_value(noise(np.ones(3), np.random.default_rng(seed)),
                          compiled(np.ones(3), np.random.default_rng(seed)))
    assert backend.count == 1
    report = npdynamo.explain(noise)(np.ones(3), np.random.default_rng(0))
    assert report.graph_count == 1 and report.graph_break_count == 0
    assert not any("state" in str(g) for g in report.guards)


def test_identical_draws_are_never_merged():
    def twice(rng):
        return rng.random(3) - rng.random(3)

    r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
    assert_same_value(twice(r1), npdynamo.compile(twice, fullgraph=True)(r2))
    assert r1.bit_generator.state == r2.bit_generator.state


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_numbers_are_exact_breaks(backend):
    r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
    x = np.arange(3.0)
    compiled = npdynamo.compile(python_number, backend=backend)
    for _ in range(2):
        assert_same_value(python_number(x, r1), compiled(x, r2))
        assert r1.bit_generator.state == r2.bit_generator.state
    report = npdynamo.explain(python_number)(x, np.random.default_rng(0))
    assert report.graph_break_count >= 1
    assert "Python number" in str(report.break_reasons[0].reason)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_graph_raising_after_a_draw_draws_nothing_twice(backend):
    r1, r2 = np.random.default_rng(4), np.random.default_rng(4)
    x = np.arange(3.0)
    compiled = npdynamo.compile(raises_at_run_time, backend=backend)
    assert_same_value(raises_at_run_time(x, r1, np.array([0, 2, 1])),
                      compiled(x, r2, np.array([0, 2, 1])))
    bad = np.array([0, 5, 1])
    with pytest.raises(IndexError) as plain:
        raises_at_run_time(x, r1, bad)
    with pytest.raises(IndexError) as comp:
        compiled(x, r2, bad)
    assert str(comp.value) == str(plain.value)
    assert r1.bit_generator.state == r2.bit_generator.state


ERRORS = [
    lambda rng: rng.normal(np.zeros(3), 1.0, size=(2,)),
    lambda rng: rng.normal(np.zeros((2, 3)), 1.0, size=(3,)),
    lambda rng: rng.normal(np.zeros(2), np.ones(3)),
    lambda rng: rng.normal(0.0, -1.0, size=2),
    lambda rng: rng.normal(0.0, -np.ones(2)),
    lambda rng: rng.integers(5, 3, size=2),
    lambda rng: rng.integers(0, 5, size=2, dtype=np.float64),
    lambda rng: rng.random(2, dtype=np.int32),
    lambda rng: rng.random(size=(2, -1)),
    lambda rng: rng.choice(5, 6, replace=False),
    lambda rng: rng.choice(np.ones(3), 2, p=np.array([0.5, 0.6, 0.1])),
    lambda rng: rng.permutation(np.ones(()), axis=0),
    lambda rng: rng.normal(0.0, 1.0, 3, 4),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_are_numpys_and_leave_the_same_state(i):
    fn = ERRORS[i]
    r1, r2 = np.random.default_rng(8), np.random.default_rng(8)
    r1.random(2)
    r2.random(2)
    with pytest.raises(Exception) as plain:
        fn(r1)
    with pytest.raises(Exception) as comp:
        npdynamo.compile(fn)(r2)
    assert type(comp.value) is type(plain.value) and str(comp.value) == str(plain.value)
    assert r1.bit_generator.state == r2.bit_generator.state


# -- the draw rule against NumPy ------------------------------------------------------------
F32 = np.zeros(3, np.float32)
GEN_CALLS = [
    ("random", (), {"size": 4}), ("random", ((2, 3),), {"dtype": np.float32}),
    ("standard_normal", (5,), {}), ("standard_exponential", (), {"size": (1, 2)}),
    ("standard_gamma", (F32 + 2,), {}), ("standard_gamma", (2.0,), {"size": 3}),
    ("normal", (F32, 1.0), {}), ("normal", (np.zeros((2, 1)), np.ones(3)), {}),
    ("normal", (0.0, 1.0, (2, 3)), {}), ("normal", (np.zeros(3), 1.0, (4, 3)), {}),
    ("uniform", (), {"size": 0}), ("exponential", (np.ones(2),), {}),
    ("gamma", (2.0, 1.0, 3), {}), ("beta", (np.ones(3), 2.0), {}), ("poisson", (3.0, 4), {}),
    ("poisson", (np.ones((2, 2)),), {}), ("binomial", (np.array([3, 4]), 0.5), {}),
    ("integers", (5,), {}), ("integers", (0, np.array([3, 4])), {}),
    ("integers", (5,), {"size": 3, "dtype": np.uint8}), ("integers", (np.array(2), 5), {}),
    ("integers", (0, 3), {"dtype": np.int32}), ("integers", (0, 2, 3), {"endpoint": True}),
    ("choice", (5, 3), {}), ("choice", (np.arange(4.0), 2), {}), ("choice", (np.arange(4.0),), {}),
    ("choice", (np.ones((3, 2)),), {}), ("choice", (np.ones((3, 4)), 2), {"axis": 1}),
    ("choice", (np.ones((5, 4)), (2, 2)), {"replace": False}), ("permutation", (5,), {}),
    ("permutation", (np.ones((3, 2)),), {}), ("permutation", (np.ones((3, 4)),), {"axis": 1}),
    ("triangular", (0.0, np.full(2, 0.5), 1.0), {}), ("vonmises", (0.0, 1.0, 2), {}),
]
LEGACY_CALLS = [
    ("rand", (2, 3), {}), ("randn", (4,), {}), ("random_sample", ((2,),), {}),
    ("randint", (0, 5), {"size": 3}), ("randint", (5,), {"dtype": np.int32}),
    ("randint", (0, np.array([3, 7])), {}), ("normal", (np.zeros(2),), {}),
    ("choice", (np.arange(3.0), 2), {}), ("permutation", (np.ones((3, 2)),), {}),
    ("permutation", (4,), {}), ("standard_gamma", (np.ones(3),), {}),
    ("poisson", (1.0, (2, 2)), {}),
]


@pytest.mark.parametrize("legacy, method, args, kwargs",
                         [(False, *c) for c in GEN_CALLS] + [(True, *c) for c in LEGACY_CALLS])
def test_draw_rule_matches_numpy(legacy, method, args, kwargs):
    state = np.random.RandomState(0) if legacy else np.random.default_rng(0)
    expected = meta_of(getattr(state, method)(*args, **kwargs))
    op, op_args, op_kwargs = bind_draw(GeneratorMeta(type(state)), method, args, kwargs)
    assert op is REGISTRY["draw"]
    assert op.infer(*to_metas(op_args), **op_kwargs) == expected


def draw_then_ufuncs(x, rng, scale):
    return (x * scale + rng.standard_normal(x.shape)) * scale


@pytest.mark.parametrize("mode", ["raise", "warnings-as-errors"])
def test_a_ufunc_raising_after_the_draw_leaves_the_state_as_plain(mode):
    r1, r2 = np.random.default_rng(8), np.random.default_rng(8)
    x = np.array([1.0, 1e300])
    compiled = npdynamo.compile(draw_then_ufuncs)
    assert_same_value(draw_then_ufuncs(x, r1, 1.0), compiled(x, r2, 1.0))
    with warnings.catch_warnings():
        if mode == "raise":
            context = np.errstate(over="raise")
        else:
            warnings.simplefilter("error")
            context = np.errstate()
        with context:
            with pytest.raises((FloatingPointError, RuntimeWarning)) as plain:
                draw_then_ufuncs(x, r1, 1e10)
            with pytest.raises(type(plain.value)):
                compiled(x, r2, 1e10)
    assert r1.bit_generator.state == r2.bit_generator.state


def test_no_state_is_saved_when_nothing_can_raise_after_the_draw(monkeypatch):
    saves = []
    original = compile_module.saved_states
    monkeypatch.setattr(compile_module, "saved_states",
                        lambda states: saves.append(1) or original(states))
    r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
    x = np.arange(4.0)
    compiled = npdynamo.compile(draw_then_ufuncs)
    for _ in range(3):
        assert_same_value(draw_then_ufuncs(x, r1, 2.0), compiled(x, r2, 2.0))
    assert saves == [] and r1.bit_generator.state == r2.bit_generator.state
    with np.errstate(over="raise"):  # now a ufunc could raise: the state is saved first
        compiled(x, r2, 2.0)
    assert saves == [1]


def fixed_draws(x, rng):
    return x + rng.normal(0.0, 0.5, size=x.shape), rng.uniform(-1, 1, size=3)


@pytest.mark.parametrize("make", [np.random.default_rng, np.random.RandomState])
def test_a_draw_with_fixed_parameters_is_generated_as_the_method_call(make):
    """``rng.normal(0.0, 0.5, ...)`` in the generated code itself, not a call of the draw op's
    impl around it (half a microsecond per draw), with NumPy's numbers and state."""
    backend = CountingBackend()
    compiled = npdynamo.compile(fixed_draws, backend=backend)
    x = np.linspace(0.0, 1.0, 5)
    plain_rng, compiled_rng = make(3), make(3)
    for _ in range(2):
        assert_same_value(fixed_draws(x, plain_rng), compiled(x, compiled_rng))
    # the same state after: the next numbers agree
    assert_same_value(plain_rng.uniform(size=4), compiled_rng.uniform(size=4))
    code = backend.graphs[0].code
    assert ".normal(0.0, 0.5, (5,))" in code and ".uniform(-1, 1, (3,))" in code, code
    assert "_draw(" not in code
