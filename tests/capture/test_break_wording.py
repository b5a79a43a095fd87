"""Break reasons in the user's words: they name the user's code and line, not the compiler's
(no ``__resume_at_...`` names, no loop-iterator jargon), and a break inside library code
(``json.dumps``) is one break at the user's call, whose call runs in Python."""

import collections
import contextlib
import io
import json
import re

import numpy as np

import npdynamo
from tests.differential import check_same


def fit(x, y, w, steps=4):
    for step in range(steps):
        err = x @ w - y
        print("step", step)  # a graph break in the loop's body
        w = w - 0.1 * (x.T @ err)
    return w


def dumps_inside(x):
    y = np.abs(x) * 2
    text = json.dumps(3)
    return y + len(text)


def _explain(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return npdynamo.explain(fn)(*args)


def _fit_args():
    rng = np.random.default_rng(0)
    return rng.standard_normal((8, 3)), rng.standard_normal(8), np.zeros(3)


def test_a_loop_stepped_by_python_says_why_in_the_users_words():
    report = _explain(fit, *_fit_args())
    text = report.verbose()
    loop = [r for r in report.break_reasons if r.source_line.startswith("for step in")]
    assert loop, text
    assert "graph break in its body" in loop[0].reason
    assert "out of the loop" in loop[0].hint
    assert "loop iterator" not in text and "rewrite this line with NumPy" not in loop[0].hint


def test_reports_name_the_users_function_not_resume_functions():
    report = _explain(fit, *_fit_args())
    assert "__resume_at" not in str(report) and "__resume_at" not in report.verbose()
    assert "fit (from line " in str(report)
    compiled = npdynamo.compile(fit)
    with contextlib.redirect_stdout(io.StringIO()):
        compiled(*_fit_args())
    assert "__resume_at" not in str(npdynamo.inspect(compiled))


def test_a_break_inside_the_standard_library_is_one_break_at_the_users_call():
    report = _explain(dumps_inside, np.ones(3))
    (reason,) = report.break_reasons
    assert reason.filename == __file__ and reason.source_line == "text = json.dumps(3)"
    assert "library code" in reason.reason and "runs in Python" in reason.reason
    assert report.graph_count >= 1


def test_the_library_call_runs_in_python_with_the_same_results():
    check_same(dumps_inside, np.ones(3), calls=3, graphs=2, breaks=1)
    check_same(dumps_inside, np.ones(3), backend="numba", calls=2, graphs=2, breaks=1)


def fit_until_small(x, y, w, steps):
    for step in range(steps):
        w = w - 0.1 * (x.T @ (x @ w - y))
        if step % 5 == 0:
            print(step)
        if float(np.abs(w).max()) > 1e9:  # a break on data in every step
            break
    return w


def test_code_past_the_cache_limit_is_named_as_the_user_wrote_it_and_warns_at_their_line():
    import warnings

    args = (np.ones((4, 2)), np.ones(4), np.zeros(2), 20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = _explain(fit_until_small, *args)
    frames = "\n".join(report.python_frames)
    assert "later cases run in Python" in frames, report.verbose()
    assert "__resume_at" not in frames and "fit_until_small (from line " in frames
    limit = [w for w in caught if type(w.message).__name__ == "RecompileLimitWarning"]
    assert limit and all(w.filename == __file__ for w in limit), [
        (w.filename, w.lineno) for w in limit]


def match_inside(x):
    m = re.match(r"a+", "aaa")  # a break deep inside re's module-level cache
    return x * 2.0 + (m is not None)


def test_a_library_break_does_not_show_the_librarys_internals():
    report = _explain(match_inside, np.ones(3))
    reasons = [r for r in report.break_reasons if "library code" in r.reason]
    assert reasons, report.verbose()
    assert all("__globals__" not in r.reason for r in report.break_reasons), report.verbose()


def counter_inside(x):
    c = collections.Counter("abca")
    return x * c["a"]


def test_the_default_hint_fits_code_that_is_not_about_arrays():
    report = _explain(counter_inside, np.ones(3))
    assert report.break_reasons
    for reason in report.break_reasons:
        assert reason.hint and "rewrite this line with NumPy operations, or" not in reason.hint
    check_same(counter_inside, np.ones(3), calls=2, graphs=1, breaks=2)  # Counter(), c["a"]


def float_of_a_fraction(x, q):
    return x * float(q)


def test_a_python_object_the_graph_cannot_use_is_not_called_a_graph_value():
    import fractions

    report = _explain(float_of_a_fraction, np.ones(3), fractions.Fraction(1, 3))
    (reason,) = report.break_reasons
    assert reason.reason == "float() of a Fraction is not supported", reason.reason
    check_same(float_of_a_fraction, np.ones(3), fractions.Fraction(1, 3), calls=2, graphs=1,
               breaks=1)
