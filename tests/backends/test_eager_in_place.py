"""The eager backend writes in place where NumPy does: updates of arguments (``out=``) and
assignments into arrays the graph made (``x[i, j:] -= v`` in a loop). Same values, same objects,
same memory as plain NumPy, and the copying path whenever a ufunc could raise (a user's
``np.errstate``, warnings turned into errors) or the write would not be exact (a later read of
the old value, a returned view)."""

from __future__ import annotations

import copy
import inspect
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo
from npdynamo.capture.guards import GuardKind
from npdynamo.capture.hooks import compiled_entries
from tests.differential import assert_same_value, check_same, run_both


def adam(p, g, m, v, t):
    m *= 0.9
    m += 0.1 * g
    v *= 0.999
    v += 0.001 * g * g
    p -= 1e-3 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)


def sgd(params, grads, lr=0.1):
    for k in params:
        params[k] -= lr * grads[k]
    return sum(float(0) for _ in params)


def _arrays(n=64, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n) for _ in range(3)] + [rng.random(n)]


def _generated(compiled) -> str:
    (entry,) = compiled_entries(compiled)
    return entry.compiled.run.__npdynamo_source__


def _addresses(args):
    return [a.__array_interface__["data"][0] for a in args if isinstance(a, np.ndarray)]


def test_adam_writes_the_callers_arrays_in_place():
    p, g, m, v = _arrays()
    compiled = check_same(adam, p, g, m, v, 3, graphs=1, breaks=0)
    assert "out=m" in _generated(compiled) and "out=p" in _generated(compiled)
    args = [p.copy(), g.copy(), m.copy(), v.copy()]
    before = _addresses(args)
    objects = [id(a) for a in args]
    compiled(*args, 3)
    assert _addresses(args) == before and [id(a) for a in args] == objects


def test_dict_of_parameters():
    rng = np.random.default_rng(1)
    params = {k: rng.standard_normal((4, 3)) for k in "abc"}
    grads = {k: rng.standard_normal((4, 3)) for k in "abc"}
    compiled = check_same(sgd, params, grads, graphs=1, breaks=0)
    assert _generated(compiled).count("out=params_") == 3


def reads_old_value_later(p, g):
    old = p.T  # a view: it sees the update, in NumPy and compiled
    p -= g
    return old.sum(), p.sum()


def returns_a_view(p, g):
    view = p[::2]
    p += g
    return view


def overlapping_operand(p):
    p -= p[::-1]
    p *= p


def two_updates_reading_each_other(a, b):
    a += 1.0
    b -= a
    a *= b


@pytest.mark.parametrize("fn", [reads_old_value_later, returns_a_view, overlapping_operand,
                                two_updates_reading_each_other])
def test_aliasing_cases_match_plain_numpy(fn):
    arrays = _arrays(16)[: len(inspect.signature(fn).parameters)]
    check_same(fn, *arrays, calls=3, graphs=1, breaks=0)


def overflowing(p, big):
    p *= big
    p += 1.0


@pytest.mark.parametrize("mode", ["raise", "call", "warnings-as-errors"])
def test_a_ufunc_that_raises_leaves_the_arguments_as_numpy_does(mode):
    compiled = npdynamo.compile(overflowing)
    p = np.array([1.0, 1e300, 2.0])
    compiled(p.copy(), 1.0)  # captured under the default state
    if mode == "raise":
        context = np.errstate(over="raise")
    elif mode == "call":
        def fail(kind, flag):
            raise ArithmeticError(kind)
        context = np.errstate(over="call", call=fail)
    else:
        context = warnings.catch_warnings()
    with context:
        if mode == "warnings-as-errors":
            warnings.simplefilter("error")
        run = run_both(overflowing, compiled, (p, 1e10), {})
    assert run.exc is not None
    assert_same_value(run.plain_args, run.comp_args, "args after the raise")


def train_step(x, y, w1, b1, w2, lr=0.1):
    """Updates between the backward's matmuls, transposes and sums, as users write them."""
    h = np.maximum(x @ w1 + b1, 0.0)
    err = h @ w2 - y
    d_h = (err @ w2.T) * (h > 0)
    w2 -= lr * (h.T @ err)
    b1 -= lr * d_h.sum(axis=0)
    w1 -= lr * (x.T @ d_h)
    return (err * err).mean()


def _train_args(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((8, 5)), rng.standard_normal((8, 3)),
            rng.standard_normal((5, 6)), rng.standard_normal(6), rng.standard_normal((6, 3)))


def test_updates_between_matmuls_and_sums_write_the_callers_arrays():
    args = _train_args()
    compiled = check_same(train_step, *args, calls=3, graphs=1, breaks=0)
    code = _generated(compiled)
    assert all(f"out={name}" in code for name in ("w1", "b1", "w2")), code
    args = [a.copy() for a in args]
    before, objects = _addresses(args), [id(a) for a in args]
    compiled(*args)
    assert _addresses(args) == before and [id(a) for a in args] == objects


def overflow_after_update(p, g, big):
    p -= g
    total = (p * big).sum(axis=0)  # overflows after p was written
    return total, (g.T * big).sum()


@pytest.mark.parametrize("mode", ["raise", "warnings-as-errors"])
def test_a_sum_that_raises_after_an_update_leaves_the_arguments_as_numpy_does(mode):
    compiled = npdynamo.compile(overflow_after_update)
    p, g = np.ones((3, 2)), np.full((3, 2), 1e300)
    compiled(p.copy(), g.copy(), 1.0)  # captured under the default state
    context = np.errstate(over="raise") if mode == "raise" else warnings.catch_warnings()
    with context:
        if mode != "raise":
            warnings.simplefilter("error")
        run = run_both(overflow_after_update, compiled, (p, g, 1e300), {})
    assert run.exc is not None
    assert_same_value(run.plain_args, run.comp_args, "args after the raise")


def test_default_state_warns_as_numpy_does():
    compiled = npdynamo.compile(overflowing)
    p = np.array([1.0, 1e300])
    compiled(p.copy(), 1.0)
    with pytest.warns(RuntimeWarning, match="overflow"):
        compiled(p, 1e10)
    assert np.isinf(p[1])


OPS = ["+=", "-=", "*=", "/=", "snapshot", "sum", "matmul", "view"]
#: What each kind of step between the updates keeps (returned at the end): a ufunc's value of
#: that moment, a sum or a matmul of it (NumPy calls an update may now follow), or a view that
#: sees every later update.
SNAPSHOTS = {"snapshot": "{t} * 1.0", "sum": "{t}.sum(axis=0)", "matmul": "{t} @ {t}.T",
             "view": "{t}.T"}


def update_program(steps, read_a_at_end):
    lines, snaps = [], []
    for target, op, operand in steps:
        if op in SNAPSHOTS:
            snaps.append(f"s{len(snaps)}")
            lines.append(f"    {snaps[-1]} = " + SNAPSHOTS[op].format(t=target))
        else:
            lines.append(f"    {target} {op} {operand}")
    lines.append(f"    return ({', '.join(snaps)}{',' if snaps else ''}"
                 f" {'a.sum()' if read_a_at_end else 'None'})")
    namespace: dict = {}
    exec("def updates(a, b):\n" + "\n".join(lines), namespace)
    return namespace["updates"]


UPDATE_STEPS = st.lists(
    st.tuples(st.sampled_from("ab"), st.sampled_from(OPS),
              st.sampled_from(["a", "b", "1.5", "a[::-1]", "b.T", "a.sum(axis=0)", "b @ a"])),
    min_size=1, max_size=6)


@settings(max_examples=80, deadline=None)
@given(UPDATE_STEPS, st.booleans())
def test_generated_update_sequences_match_plain_numpy(steps, read_a_at_end):
    """Chains of in-place updates of two arguments, with values taken between the updates
    (``SNAPSHOTS``) returned at the end."""
    fn = update_program(steps, read_a_at_end)
    a, b = (np.random.default_rng(2).random((3, 3)) + 0.5 for _ in range(2))
    compiled = npdynamo.compile(fn)
    with np.errstate(all="ignore"):
        for _ in range(2):
            run = run_both(fn, compiled, copy.deepcopy((a, b)), {})
            assert_same_value(run.expected, run.got)
            assert_same_value(run.plain_args, run.comp_args, "args after the call")


# -- assignments into arrays the graph made (setitem_plan, view_update_plan) -----------------

def triangular(A):
    n = A.shape[0]
    for i in range(n):
        A[i, i:] -= A[i, :i] @ A[:i, i:]
    return A


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_triangular_update_assigns_rows_in_place(backend):
    A = np.random.default_rng(3).standard_normal((12, 12)) * 0.1
    compiled = npdynamo.compile(triangular, backend=backend)
    run = run_both(triangular, compiled, (A,), {})
    if backend == "eager":
        assert_same_value(run.expected, run.got)
        assert_same_value(run.plain_args, run.comp_args, "args after the call")
    else:
        np.testing.assert_allclose(run.got, run.expected, rtol=1e-12)
    if backend == "eager":
        source = _generated(compiled)
        # rows assigned into A itself; A copied only on the path for calls where a ufunc could
        # raise (before that path's first row)
        assert source.count("_setitem(") == 1 and "A[0, 0:] = " in source
        assert "out=getitem" in source


@pytest.mark.parametrize("mode", ["raise", "warnings-as-errors"])
def test_triangular_update_raising_midway_leaves_the_input_as_numpy_does(mode):
    A = np.random.default_rng(3).standard_normal((6, 6))
    A[3, 4] = 1e300  # row 4's update overflows
    A[4, 3] = 1e300
    compiled = npdynamo.compile(triangular)
    compiled(np.eye(6))  # captured under the default state
    with warnings.catch_warnings():
        if mode == "raise":
            context = np.errstate(over="raise", invalid="raise")
        else:
            warnings.simplefilter("error")
            context = np.errstate()
        with context:
            run = run_both(triangular, compiled, (A,), {})
    assert run.exc is not None
    assert_same_value(run.plain_args, run.comp_args, "args after the raise")


def reads_a_view_after_the_assignment(A):
    B = A * 1.0
    old = B[0, :]
    first = old.sum()
    B[0, :] = 5.0
    return first, old.sum(), B


def value_overlaps_the_target(A):
    B = A + 0.0
    B[1:, :] = B[:-1, :]
    B[:, 1:] += B[:, :-1]
    return B


def returns_an_intermediate_too(A):
    B = A * 2.0
    C = B[1:]
    B[0] = -1.0
    return C, B


@pytest.mark.parametrize("fn", [reads_a_view_after_the_assignment, value_overlaps_the_target,
                                returns_an_intermediate_too])
def test_assignments_into_graph_arrays_match_plain_numpy(fn):
    check_same(fn, np.random.default_rng(4).standard_normal((5, 4)), calls=3, graphs=1, breaks=0)


STORES = ["B[{a}:{b}] = {e}", "B[{a}:{b}] += {e}", "B[{a}:{b}] *= {e}", "V = B[{a}:{b}]"]
VALUES = ["1.5", "B[{c}:{c} + ({b} - {a})]", "V[:1]", "A[{a}:{b}]"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(STORES), st.sampled_from(VALUES),
                          st.integers(0, 3), st.integers(1, 3), st.integers(0, 2)),
                min_size=1, max_size=6),
       st.sampled_from(["A * 1.0", "np.zeros((6, 3))", "np.ones_like(A)", "np.eye(6, 3)",
                        "np.arange(18.0).reshape(6, 3)"]))
def test_generated_slice_assignments_match_plain_numpy(steps, start):
    """``B`` a ufunc's result or a created array (np.zeros, ...): both are the graph's own."""
    lines = [f"    B = {start}", "    V = B[0:1]"]
    for store, value, a, width, c in steps:
        b = a + width
        lines.append("    " + store.format(a=a, b=b, e=value.format(a=a, b=b, c=c)))
    lines.append("    return B, V")
    namespace: dict = {"np": np}
    exec("def slices(A):\n" + "\n".join(lines), namespace)
    fn = namespace["slices"]
    A = np.random.default_rng(5).standard_normal((6, 3))
    compiled = npdynamo.compile(fn)
    for _ in range(2):
        run = run_both(fn, compiled, (A,), {})
        if run.exc is None:
            assert_same_value(run.expected, run.got)
        assert_same_value(run.plain_args, run.comp_args, "args after the call")


def _read_only_copy(a):
    a = a.copy()
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_read_only_argument_raises_where_python_does_and_a_writeable_one_then_compiles(
        backend):
    """Python updates m, then raises at ``v *= ...``: the same raise, m updated exactly once;
    the same function called with writeable arrays afterwards is compiled and exact."""
    compiled = npdynamo.compile(adam, backend=backend)
    for read_only in (True, False, True, False):
        p, g, m, v = _arrays()
        plain = [p.copy(), g, m.copy(), _read_only_copy(v) if read_only else v.copy()]
        comp = [p.copy(), g, m.copy(), _read_only_copy(v) if read_only else v.copy()]
        want = got = None
        try:
            adam(*plain, 3)
        except ValueError as exc:
            want = str(exc)
        try:
            compiled(*comp, 3)
        except ValueError as exc:
            got = str(exc)
        assert got == want and (want is not None) == read_only
        for a, b in zip(comp, plain):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)
    (owners,) = [g.expected for e in compiled_entries(compiled) for g in e.guard_set.guards
                 if g.kind == GuardKind.OWNERS]  # one guard: owners, distinct, writeable
    assert sorted(owners.names[i] for i in owners.written) == ["m", "p", "v"]


def bump_two(a, b):
    a += 1.0
    b += 1.0


def test_a_read_only_view_written_in_place_raises_where_python_does():
    for read_only in (False, True, False):
        base_plain, base_comp = np.zeros((2, 3)), np.zeros((2, 3))
        plain, comp = [base_plain[0], base_plain[1]], [base_comp[0], base_comp[1]]
        for views in (plain, comp):
            views[1].flags.writeable = not read_only
        compiled = npdynamo.compile(bump_two)
        outcomes = []
        for fn, args in ((bump_two, plain), (compiled, comp)):
            try:
                fn(*args)
                outcomes.append(None)
            except ValueError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1] and (outcomes[0] is not None) == read_only
        np.testing.assert_array_equal(base_comp, base_plain)


def temporaries(x, w, b):
    h = np.tanh(x @ w + b)  # add into matmul's buffer, tanh into add's
    t = h.T  # a view of h, read after the next line: h's buffer must stay h's
    g = h * 2.0
    return g + t.sum(), h[0]  # h is returned (a view of it): never reused


def temporaries_overlap(x):
    y = x * 2.0
    z = y + y[::-1]  # the other operand overlaps the buffer: NumPy resolves it
    return z - 1.0


@pytest.mark.parametrize("fn,args", [
    (temporaries, lambda: (np.arange(12.0).reshape(3, 4) / 10, np.ones((4, 3)), np.zeros(3))),
    (temporaries_overlap, lambda: (np.arange(7.0),)),
])
def test_dead_temporaries_are_reused_bitwise(fn, args):
    check_same(fn, *args(), calls=3, graphs=1, breaks=0)


def test_temporary_plan_never_reuses_what_is_read_later_or_returned():
    from npdynamo.backends.inplace import temporary_plan
    from tests.differential import CountingBackend

    backend = CountingBackend()
    npdynamo.compile(temporaries, backend=backend)(
        np.ones((3, 4)), np.ones((4, 3)), np.zeros(3))
    graph = backend.graphs[0].graph
    plan = {node.name: temp.name for node, temp in temporary_plan(graph, set()).items()}
    assert plan["add"] == "matmul" and plan["tanh"] == "add"
    assert "tanh" not in plan.values()  # viewed by h.T and returned through h[0]


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(["add", "multiply", "subtract", "maximum"]),
                                st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=8))
def test_generated_chains_of_temporaries_match_plain_numpy(steps):
    def chain(a, b):
        values = [a, b, a * 1.5, b - 0.5]
        for name, i, j in steps:
            values.append(getattr(np, name)(values[-1 - i % len(values)],
                                            values[-1 - j % len(values)]))
        return values[-1], values[len(values) // 2]

    npdynamo.reset()
    check_same(chain, np.linspace(-1, 1, 6), np.linspace(2, -2, 6), graphs=1, breaks=0)


# -- assignments into created arrays (np.zeros, np.ones, ...: arrays of the graph's own) ---------

def filled_grid(x):
    n = x.shape[0]
    z = np.zeros((n, n, 3))
    z[:, :, 0] = x.reshape(-1, 1)
    z[:, :, 1] = x
    return z.reshape(n * n, 3)


def filled_border(x):
    # a partial slice: the numba backend keeps these writes as NumPy's (a write of whole axes
    # into a fresh zeros, as filled_grid's, becomes a kernel: backends/numba/region_writes.py)
    n = x.shape[0]
    z = np.zeros((n, n, 3))
    z[1:, :, 0] = x[1:].reshape(-1, 1)
    z[:, :, 1] = x
    return z.reshape(n * n, 3)


def created_then_viewed(x):
    z = np.ones((4, x.shape[0]))
    first = z[0]  # a view, read after the assignment: it sees the write
    z[0] = x
    e = np.arange(4.0)
    e[1:] = e[:-1]  # the value overlaps the target
    f = np.full_like(x, 2.0)
    f[::2] += x[::2]
    return first.copy(), z, e, f, np.eye(3)[1]


def two_equal_creations(x):
    a = np.zeros(x.shape[0])  # equal calls: merged or not, b never sees the write into a
    b = np.zeros(x.shape[0])
    a[0] = x[0]
    c, d = np.ones_like(x), np.ones_like(x)
    c[1] = 5.0
    return a + b, b.sum(), c, d


@pytest.mark.parametrize("fn", [filled_grid, created_then_viewed, two_equal_creations])
def test_assignments_into_created_arrays_match_plain_numpy(fn):
    check_same(fn, np.linspace(0.0, 1.0, 7), calls=3, graphs=1, breaks=0)


def test_a_created_array_is_assigned_in_place():
    compiled = npdynamo.compile(filled_grid)
    compiled(np.linspace(0.0, 1.0, 7))
    source = _generated(compiled)
    assert "_setitem(" not in source and "zeros[:, :, 0] = " in source


def test_a_numba_graph_without_kernels_runs_as_the_eager_graph():
    """Nothing to fuse: the numba backend hands over the eager backend's code, in-place
    assignments included (its own program would copy the grid at each assignment)."""
    from npdynamo.backends.numba.backend import numba_backend

    made = []

    def backend(gm, example_inputs):
        made.append(numba_backend(gm, example_inputs))
        return made[-1]

    compiled = npdynamo.compile(filled_border, backend=backend)
    x = np.linspace(0.0, 1.0, 7)
    for _ in range(3):
        assert_same_value(filled_border(x), compiled(x))
    (fn,) = made
    assert "runs as the eager graph" in fn.report.tuning
