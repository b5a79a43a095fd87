"""``make conformance``'s report (``tests/conformance/runner.summarise``) on made-up results:
regressions counted, the 3x-plain-plus-2-s budget applied, capture cost per module and the
slowest captures with why (recaptures named)."""

from __future__ import annotations

from tests.conformance.runner import summarise


def _capture(fn: str, s: float, steps: int, why: str | None = None) -> dict:
    return {"fn": fn, "s": s, "steps": steps, "break": why, "python": None, "loops": []}


def test_the_report_counts_regressions_budget_and_capture_cost():
    report = {"python": "3.x", "modules": {"test_m": {
        "plain": {"a": {"status": "pass", "time": 0.1}, "b": {"status": "pass", "time": 1.0},
                  "c": {"status": "fail", "time": 0.1}},
        "compiled": {
            "a": {"status": "pass", "time": 2.5, "captures": [
                _capture("f", 1.0, 1000, "a break"), _capture("f", 0.5, 1000)]},
            "b": {"status": "error", "time": 1.0, "error": "boom", "captures": []},
            "c": {"status": "pass", "time": 9.0, "captures": [_capture("g", 0.25, 500)]}},
    }}}
    text, regressions = summarise(report)
    assert regressions == 1 and "b: [error] boom" in text
    row = next(line for line in text.splitlines() if line.startswith("test_m"))
    # tests, plain, compiled, regressions, plain s, compiled s, capture s, us per instruction
    assert row.split()[1:] == ["3", "2", "2", "1", "1.2", "12.5", "1.8", "700"]
    assert "2.50 s vs 0.10 s plain" in text  # 2.5 > 3 * 0.1 + 2
    assert "captured 2 times in this test; graph break: a break" in text
    assert "2 compiled test methods over" in text  # c failed plainly: the budget holds too


def test_doctests_are_not_counted_as_compiled_tests():
    # 3.11's test_listcomps is one doctest suite added by load_tests: its runTest is doctest's,
    # which execs the examples natively, so "compiling" it compiled doctest (1 test against 51)
    import doctest
    import types
    import unittest

    from tests.conformance.child import method_tests

    module = types.ModuleType("fake_test_module")
    module.__test__ = {"examples": ">>> [x * 2 for x in (1, 2)]\n[2, 4]\n"}

    class Case(unittest.TestCase):
        def test_one(self):
            pass

    Case.__module__ = module.__name__
    module.Case = Case
    module.load_tests = lambda loader, tests, pattern: (
        tests.addTest(doctest.DocTestSuite(module)) or tests)
    loaded = unittest.defaultTestLoader.loadTestsFromModule(module)
    assert loaded.countTestCases() == 2  # the doctest is there, and a Python function runs it
    assert [t._testMethodName for t in method_tests(module)] == ["test_one"]
