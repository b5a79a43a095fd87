"""Code a graph cannot hold: under ``fullgraph=True`` it raises ``npdynamo.Unsupported`` naming the
reason, file, line and source text, leaving the caller's data untouched; otherwise it is a graph
break and the function still matches plain Python. User code that raises keeps its exception."""

import numpy as np
import pytest

import npdynamo
from tests.capture.raising import g_assert
from tests.differential import check_same

COUNTER = 0


def f_print(x):
    y = x * 2
    print("y is", y)
    return y


def f_branch(x):
    if x.sum() > 0:
        print("positive")  # a branch that prints cannot be an in-graph cond
        return x
    return -x


def f_item(x):
    return x.sum().tolist() * 2


def f_float(x):
    return float(x.max()) > 1


def f_linalg(x):
    return np.linalg.tensorinv(x, ind=1)


def f_random(x):
    return x + np.random.rand()  # a Python float: Python code gets it (sized draws are ops)


def f_setattr(obj, x):
    obj.value = x * 2
    return x


def f_global_store(x):
    global COUNTER
    COUNTER += 1
    return x


def f_list_mutation(lst, x):
    lst.append(x * 2)
    return x


def f_inplace_input(x):
    x += 1
    return x


def f_generator(x):
    yield x


def f_explicit_break(x):
    y = x + 1
    npdynamo.graph_break()
    return y


class Box:
    pass


CASES = [
    (f_print, lambda: (np.ones(3),), "print() does input/output", 'print("y is", y)'),
    (f_branch, lambda: (np.ones(3),), "on an array condition cannot become an in-graph cond",
     "if x.sum() > 0:"),
    (f_item, lambda: (np.ones(3),), "turns a graph value into a Python value", ".tolist()"),
    (f_float, lambda: (np.ones(3),), "made by float() of an array is used where Python needs "
     "its value", "float(x.max()) > 1"),
    (f_linalg, lambda: (np.eye(3),), "numpy.linalg", "np.linalg.tensorinv(x, ind=1)"),
    (f_random, lambda: (np.ones(3),), "random", "np.random.rand()"),
    (f_explicit_break, lambda: (np.ones(3),), "graph_break", "npdynamo.graph_break()"),
]


@pytest.mark.parametrize("fn,factory,reason,line", CASES, ids=[c[0].__name__ for c in CASES])
def test_fullgraph_names_reason_and_location(fn, factory, reason, line):
    args = factory()
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    compiled = npdynamo.compile(fn, fullgraph=True)
    with pytest.raises(npdynamo.Unsupported) as info:
        compiled(*args)
    text = str(info.value)
    assert reason in text
    assert "test_unsupported.py" in text and line in text
    for a, b in zip(args, before):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)  # nothing half-applied
    assert isinstance(info.value, npdynamo.NpdynamoError)


def test_fullgraph_holds_an_if_on_an_array_as_one_cond():
    def sign_flip(x):
        if x.sum() > 0:
            return x
        return -x

    compiled = npdynamo.compile(sign_flip, fullgraph=True)
    for x in (np.ones(3), -np.ones(3)):
        np.testing.assert_array_equal(compiled(x), sign_flip(x))


DETERMINISTIC = [c for c in CASES if c[0] is not f_random]
#: (graphs, breaks) of each without fullgraph: f_branch breaks at the if and again at the print
#: of the branch taken; tensorinv breaks with no work before or after it
COUNTS = {f_print: (1, 1), f_branch: (1, 2), f_item: (1, 1), f_float: (1, 1), f_linalg: (0, 1),
          f_explicit_break: (1, 1)}


@pytest.mark.parametrize(
    "fn,factory,reason,line", DETERMINISTIC, ids=[c[0].__name__ for c in DETERMINISTIC]
)
def test_without_fullgraph_matches_python(fn, factory, reason, line, capsys):
    graphs, breaks = COUNTS[fn]
    check_same(fn, *factory(), graphs=graphs, breaks=breaks)


def test_random_call_at_a_break_draws_the_same_numbers():
    compiled = npdynamo.compile(f_random)
    for _ in range(2):
        np.random.seed(7)
        expected = f_random(np.ones(3))
        np.random.seed(7)
        np.testing.assert_array_equal(compiled(np.ones(3)), expected)


def test_generator_is_refused_under_fullgraph():
    with pytest.raises(npdynamo.Unsupported, match="generator"):
        list(npdynamo.compile(f_generator, fullgraph=True)(np.ones(2)))


def test_generator_runs_in_python():
    assert list(npdynamo.compile(f_generator)(np.ones(2)))[0].tolist() == [1.0, 1.0]


def test_region_mode_runs_refused_code_in_python(capsys):
    def region_fn(x):
        print("side")
        return x * 2

    with npdynamo.enable():
        region_fn(np.ones(2))
        out = region_fn(np.ones(2))  # hooked from here on: refused, runs in Python
    np.testing.assert_array_equal(out, np.ones(2) * 2)
    assert capsys.readouterr().out == "side\nside\n"


# -- user code that raises: the compiled function raises exactly what Python raises -------------
def g_shape_mismatch(x, y):
    return x @ y


def g_key_error(d):
    return d["missing"] * 2


def g_zero_division(x, n):
    return x * (1 / n)


def g_bad_reshape(x):
    return x.reshape(5, 5)


@pytest.mark.parametrize(
    "fn,args,graphs",  # a call that raises reruns in Python: no graph
    [
        (g_shape_mismatch, (np.ones((2, 3)), np.ones((4, 2))), 0),
        (g_key_error, ({"a": np.ones(2)},), 0),
        (g_assert, (np.ones(2), 0), 0),
        (g_assert, (np.ones(2), 2), 1),
        (g_zero_division, (np.ones(2), 0), 0),
        (g_bad_reshape, (np.ones(6),), 0),
    ],
)
def test_user_exceptions_match(fn, args, graphs):
    check_same(fn, *args, graphs=graphs, breaks=0)


def f_nested_branches(db, out):
    for i in range(db.shape[0]):
        if db[i, 1:].all():
            if db[i, 0]:
                out.append(i)
    return out


def test_a_refused_nested_branch_says_why_once():
    report = npdynamo.explain(f_nested_branches)(np.ones((3, 3), dtype=bool), [])
    reasons = [b.reason for b in report.break_reasons] + report.loops
    prefix = "cannot become an in-graph cond"
    assert any(prefix in r for r in reasons), reasons
    assert all(r.count(prefix) <= 1 for r in reasons), reasons
