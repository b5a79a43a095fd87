"""Dynamic shapes through capture, plain vs compiled: automatic dynamic dimensions, dynamic=True,
mark_dynamic/mark_static, size guards that fail and recompile, sizes read by Python code."""

import contextlib
import io
import warnings

import numpy as np
import pytest

import npdynamo
from npdynamo.autograd import value_and_grad
from npdynamo.backends import lookup_backend
from tests.differential import CountingBackend, assert_same_value, check_same, run_both

SIZES = range(2, 22)  # 20 batch sizes (0 and 1 stay specialised by design)


@pytest.fixture(autouse=True)
def _fresh():
    npdynamo.reset()  # what automatic dynamic shapes learnt is per code object
    yield
    npdynamo.reset()


class NumbaCounting(CountingBackend):
    def __init__(self):
        super().__init__()
        self.compiled = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        fn = lookup_backend("numba")(gm, example_inputs)
        self.compiled.append(fn)
        return fn


def _run_sizes(fn, make_args, backend, sizes=SIZES, exact=True):
    compiled = npdynamo.compile(fn, backend=backend)
    for n in sizes:
        run = run_both(fn, compiled, make_args(n), {})
        if run.exc is None:
            if exact:
                assert_same_value(run.expected, run.got)
            else:
                pairs = zip(run.expected, run.got) if isinstance(run.expected, tuple) else [
                    (run.expected, run.got)]
                for e, g in pairs:
                    np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
        if exact:
            assert_same_value(run.plain_args, run.comp_args, "args after the call")
        else:
            for e, g in zip(_arrays(run.plain_args), _arrays(run.comp_args)):
                np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    return compiled


def _arrays(tree):
    if isinstance(tree, np.ndarray):
        return [tree]
    if not isinstance(tree, (dict, list, tuple)):
        return []
    items = tree.values() if isinstance(tree, dict) else tree
    return [a for item in items for a in _arrays(item)]


def mlp_forward(x, w, b):
    h = np.tanh(x @ w + b)
    return (h * h).mean(axis=1), h.sum(), h[1:] - h[:-1]


def _mlp_args(n):
    rng = np.random.default_rng(n)
    return rng.standard_normal((n, 4)), np.linspace(-1, 1, 12).reshape(4, 3), np.ones(3)


def test_twenty_batch_sizes_are_two_captures_on_eager_bitwise():
    backend = CountingBackend()
    _run_sizes(mlp_forward, _mlp_args, backend)
    assert backend.count == 2  # the first call specialises; the changed size becomes a symbol


def test_twenty_batch_sizes_compile_numba_kernels_once():
    backend = NumbaCounting()
    _run_sizes(mlp_forward, _mlp_args, backend, exact=False)
    assert backend.count == 2
    report = backend.compiled[-1].report
    kernels_after_two = report.compiled_kernels()
    _run_sizes(mlp_forward, _mlp_args, backend, sizes=range(30, 40), exact=False)
    assert backend.count == 2 and report.compiled_kernels() == kernels_after_two


def loss_fn(params, x, y):
    h = np.maximum(x @ params["w1"] + params["b1"], 0.0)
    logits = h @ params["w2"]
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -(logp * y).sum(axis=1).mean()


def train_step(params, x, y):
    loss, grads = value_and_grad(loss_fn)(params, x, y)
    for k in params:
        params[k] -= 0.1 * grads[k]
    return loss


def _step_args(n):
    rng = np.random.default_rng(n)
    params = {"w1": np.linspace(-1, 1, 20).reshape(5, 4), "b1": np.zeros(4),
              "w2": np.linspace(1, -1, 12).reshape(4, 3)}
    return params, rng.standard_normal((n, 5)), np.eye(3)[rng.integers(0, 3, n)]


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_training_step_with_gradients_and_in_place_update(backend):
    counting = CountingBackend() if backend == "eager" else NumbaCounting()
    _run_sizes(train_step, _step_args, counting, exact=backend == "eager")
    assert counting.count <= 2


def test_dynamic_true_is_one_capture_and_false_one_per_size():
    backend = CountingBackend()
    compiled = npdynamo.compile(mlp_forward, backend=backend, dynamic=True)
    # from 3: at 2, h[1:] has one row, and a size of 1 broadcasts (that capture guards on it)
    for n in range(3, 23):
        run = run_both(mlp_forward, compiled, _mlp_args(n), {})
        assert_same_value(run.expected, run.got)
    assert backend.count == 1
    npdynamo.reset()
    backend = CountingBackend()
    compiled = npdynamo.compile(mlp_forward, backend=backend, dynamic=False)
    for n in range(2, 7):
        check_same(mlp_forward, *_mlp_args(n), compiled=compiled, calls=1, graphs=n - 1,
                   breaks=0)  # one capture per size
    assert backend.count == 5


def test_mark_dynamic_and_mark_static():
    backend = CountingBackend()
    compiled = npdynamo.compile(mlp_forward, backend=backend)
    for n in (5, 9, 13):
        x, w, b = _mlp_args(n)
        npdynamo.mark_dynamic(x, 0)
        assert_same_value(mlp_forward(x, w, b), compiled(x, w, b))
    assert backend.count == 1
    npdynamo.reset()
    backend = CountingBackend()
    compiled = npdynamo.compile(mlp_forward, backend=backend, dynamic=True)
    for n in (5, 9):
        x, w, b = _mlp_args(n)
        npdynamo.mark_static(x, 0)
        assert_same_value(mlp_forward(x, w, b), compiled(x, w, b))
    assert backend.count == 2
    with pytest.raises(npdynamo.InvalidArgument):
        npdynamo.mark_dynamic(np.ones(3), 1)
    with pytest.raises(npdynamo.InvalidArgument):
        npdynamo.mark_dynamic([1, 2], 0)


def add_pair(x, y):
    return x * 2.0 + y  # relies on x.shape[0] == y.shape[0]


def test_a_relation_the_graph_relied_on_is_a_guard():
    backend = CountingBackend()
    compiled = npdynamo.compile(add_pair, backend=backend, dynamic=True)
    check_same(add_pair, np.ones(5), np.arange(5.0), compiled=compiled, calls=1, graphs=1,
               breaks=0)
    check_same(add_pair, np.ones(8), np.arange(8.0), compiled=compiled, calls=1, graphs=1,
               breaks=0)
    assert backend.count == 1
    check_same(add_pair, np.ones(8), np.arange(1.0), compiled=compiled, calls=1, graphs=2,
               breaks=0)  # broadcasts
    assert backend.count == 2  # the guard x.shape[0] == y.shape[0] failed: a recompile
    check_same(add_pair, np.ones(8), np.arange(3.0), compiled=compiled, calls=1, graphs=2,
               breaks=0)  # Python raises
    report = npdynamo.explain(compiled)(np.ones(6), np.arange(6.0))
    assert "y.shape[0] == x.shape[0]" in report.verbose() or \
        "x.shape[0] == y.shape[0]" in report.verbose()


def size_one_broadcast(x, row):
    return x * row + x.sum(axis=0)


def reshape_pairs(x):
    return x.reshape(-1, 2).sum(axis=1)


def shifted(x):
    return x[1:-1] - x[:-2] + x[2:]


def product(a, b):
    return a @ b


@pytest.mark.parametrize(
    "fn,make",
    [
        (size_one_broadcast, lambda n: (np.ones((n, 3)) * n, np.arange(3.0).reshape(1, 3))),
        (reshape_pairs, lambda n: (np.arange(2.0 * n),)),
        (shifted, lambda n: (np.arange(float(n + 1)) ** 2,)),
        (product, lambda n: (np.ones((n, n + 1)), np.arange(3.0 * (n + 1)).reshape(n + 1, 3))),
    ],
)
def test_symbolic_rules_through_capture(fn, make):
    backend = CountingBackend()
    _run_sizes(fn, make, backend)
    assert backend.count == 2


def test_odd_size_for_a_reshape_by_pairs_raises_as_numpy_does():
    compiled = npdynamo.compile(reshape_pairs, dynamic=True)
    check_same(reshape_pairs, np.arange(8.0), compiled=compiled, calls=1, graphs=1, breaks=0)
    check_same(reshape_pairs, np.arange(7.0), compiled=compiled, calls=1, graphs=1,
               breaks=0)  # ValueError


def mean_by_hand(x):
    n = x.shape[0]  # a symbolic size in Python: kept symbolic through / and np.arange
    picked = x[np.arange(n), np.arange(n) % x.shape[1]]
    return x.sum(axis=0) / n, picked * (n - 1)


def repeat_by_size(x):
    out = x[0]
    for i in range(1, len(x)):  # range() needs a real int: the size is specialised
        out = out + x[i]
    return out


def test_sizes_read_by_python_stay_symbolic_where_the_graph_can_compute_them():
    backend = CountingBackend()
    _run_sizes(mean_by_hand, lambda n: (np.arange(3.0 * n).reshape(n, 3),), backend)
    assert backend.count == 2
    backend = CountingBackend()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _run_sizes(repeat_by_size, lambda n: (np.arange(2.0 * n).reshape(n, 2),), backend,
                   sizes=range(2, 7))
    assert backend.count == 5  # one per size: range(len(x)) is a guarded constant


def cross_entropy_step(x, t, labels, w, lr):
    logits = x @ w
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    n = x.shape[0]
    loss = -np.mean(np.log(p[np.arange(n), labels]))
    return loss, w - lr * (x.T @ ((p - t) / n))


def _ce_args(n):
    rng = np.random.default_rng(n)
    labels = rng.integers(0, 3, n)
    return (rng.standard_normal((n, 4)), np.eye(3)[labels], labels,
            np.linspace(-1, 1, 12).reshape(4, 3), 0.1)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_training_step_that_reads_its_batch_size(backend):
    counting = CountingBackend() if backend == "eager" else NumbaCounting()
    _run_sizes(cross_entropy_step, _ce_args, counting, exact=backend == "eager")
    assert counting.count == 2


def break_in_middle(x):
    y = x * 2
    print(y.sum())
    return y + 1


def test_graph_break_with_dynamic_sizes():
    backend = CountingBackend()
    with contextlib.redirect_stdout(io.StringIO()):
        _run_sizes(break_in_middle, lambda n: (np.arange(float(n)),), backend)
    assert backend.count <= 4  # the function and its resume function, twice each


def test_reset_forgets_learnt_dimensions():
    backend = CountingBackend()
    compiled = npdynamo.compile(mlp_forward, backend=backend)
    for n in (3, 4, 5):
        compiled(*_mlp_args(n))
    assert backend.count == 2
    npdynamo.reset()
    compiled = npdynamo.compile(mlp_forward, backend=backend)
    compiled(*_mlp_args(6))
    compiled(*_mlp_args(6))
    explained = npdynamo.explain(compiled)(*_mlp_args(6))
    assert "x.shape == (6, 4)" in explained.verbose()  # specialised again after reset


def size_only_input(x, y):
    n = x.shape[0]  # x's data is never read: the graph still reads its size
    return np.arange(n) * 2.0 + y.sum()


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_an_input_read_only_for_its_size(backend):
    compiled = npdynamo.compile(size_only_input, dynamic=True, backend=backend)
    for k in (3, 4, 5):
        check_same(size_only_input, np.ones(k), np.ones(2), compiled=compiled, graphs=1, breaks=0,
                   calls=1)
