"""One CPython test module in one mode (plain or compiled), run by ``runner.py`` in a subprocess.

``python -m tests.conformance.child MODULE MODE OUT [SKIP...]`` imports ``test.MODULE`` from the
standard library of the Python that runs it (nothing of CPython's test suite is copied into this
repository), runs its unittest tests in order (class and module fixtures included) and appends one
JSON line per test to OUT: a ``start`` line before the test and a result line after it, so that
the parent can tell which test a crash or a hang took down and start again after it (the tests in
SKIP are left out of the rerun).

In ``compiled`` mode every test method, a Python function, is replaced on its instance by
``npdynamo.compile(method, backend="eager")``; setUp, tearDown and the helpers the method calls
stay as they are (the compiled method inlines them or calls them at a graph break). Each result
line then also carries the captures the call made: the seconds, the instructions stepped through
and the graph break of every entry built. Doctests have no method to compile (their ``runTest`` is
doctest's, which ``exec``s the examples) and are left out of both modes.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import signal
import sys
import time
import traceback
import types
import unittest
import warnings

#: Seconds a single test may run before it is stopped (``CONFORMANCE_TEST_TIMEOUT``).
TEST_TIMEOUT_S = 30.0


class TestTimeout(BaseException):
    """Raised into a test that ran past the per-test timeout (a BaseException, so that the test's
    own ``except Exception`` does not swallow it)."""


def _on_alarm(signum, frame):
    raise TestTimeout(f"the test ran past {TEST_TIMEOUT_S:.0f} s")


def flatten(suite) -> list[unittest.TestCase]:
    out = []
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            out.extend(flatten(item))
        else:
            out.append(item)
    return out


def method_tests(module: types.ModuleType) -> list[unittest.TestCase]:
    """The module's unittest tests whose test method is a Python function of the tests, in
    loading order. A module's ``load_tests`` may add doctests (``doctest.DocTestCase``): their
    test method is doctest's own ``runTest``, which ``exec``s each example natively, so compiling
    it would compile doctest, not the examples; they are left out (3.11's ``test_listcomps`` is
    one doctest suite and nothing else: no test there)."""
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    tests = []
    for test in flatten(suite):
        name = getattr(test, "_testMethodName", None)
        if not isinstance(test, unittest.TestCase) or name is None:
            continue
        method = getattr(type(test), name, None)
        if isinstance(method, types.FunctionType) and not _harness(method):
            tests.append(test)
    return tests


def _harness(method: types.FunctionType) -> bool:
    """Whether ``method`` is the test harness's own (doctest's or unittest's ``runTest``, which
    runs code given to it) rather than a test written in a test module."""
    return method.__module__ == "doctest" or method.__module__.startswith("unittest")


def first_line(err) -> str:
    """The last line of an exception's traceback text: its type and message."""
    exc_type, exc, _ = err
    text = "".join(traceback.format_exception_only(exc_type, exc)).strip().splitlines()
    return (text[-1] if text else exc_type.__name__)[:300]


class Recorder:
    """The captures made during one test (the eager session's recorder)."""

    def __init__(self) -> None:
        self.entries: list[dict] = []

    def __call__(self, entry, fn) -> None:
        reason = entry.graph_break
        self.entries.append({
            "fn": getattr(fn, "__qualname__", "?"),
            "s": round(entry.compile_time_s, 5),
            "steps": entry.steps,
            "break": None if reason is None else str(getattr(reason, "reason", reason))[:200],
            "python": (entry.runs_python or "")[:200] or None,
            "loops": [str(note)[:120] for note in entry.loops][:4],
        })


class Result(unittest.TestResult):
    """Writes the start and the outcome of every test to the output file as it goes."""

    def __init__(self, out, recorder: Recorder | None) -> None:
        super().__init__()
        self.out = out
        self.recorder = recorder
        self.status: dict[str, tuple[str, str]] = {}

    def _write(self, record: dict) -> None:
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    def startTest(self, test) -> None:
        super().startTest(test)
        self.status[test.id()] = ("pass", "")
        self._write({"event": "start", "id": test.id()})
        if self.recorder is not None:
            self.recorder.entries = []
        self.started = time.perf_counter()
        self.cpu_started = time.process_time()
        signal.setitimer(signal.ITIMER_REAL, TEST_TIMEOUT_S)

    def stopTest(self, test) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        elapsed = time.perf_counter() - self.started
        cpu = time.process_time() - self.cpu_started  # this process's own work, not the load's
        status, error = self.status[test.id()]
        record = {"event": "done", "id": test.id(), "status": status, "error": error,
                  "time": round(elapsed, 4), "cpu": round(cpu, 4)}
        if self.recorder is not None:
            record["captures"] = self.recorder.entries
        self._write(record)
        super().stopTest(test)

    def _set(self, test, status: str, err=None) -> None:
        # the first failure of a test is the one reported (a subtest's, a tearDown's ...)
        if self.status.get(test.id(), ("pass", ""))[0] == "pass":
            error = first_line(err) if err is not None else ""
            if err is not None and issubclass(err[0], TestTimeout):
                status = "timeout"
            self.status[test.id()] = (status, error)

    def addError(self, test, err) -> None:
        self._set(getattr(test, "test_case", test), "error", err)

    def addFailure(self, test, err) -> None:
        self._set(test, "fail", err)

    def addSubTest(self, test, subtest, err) -> None:
        if err is not None:
            kind = "fail" if issubclass(err[0], test.failureException) else "error"
            self._set(test, kind, err)

    def addSkip(self, test, reason) -> None:
        self._set(test, "skip")

    def addUnexpectedSuccess(self, test) -> None:
        self._set(test, "fail", (AssertionError, AssertionError("unexpected success"), None))


def compile_methods(tests: list[unittest.TestCase]) -> Recorder:
    """Compile each test method on the eager backend, in sessions whose recorder sees every
    capture (functions called natively at a break included)."""
    from npdynamo.api import REMAKE, make_session
    from npdynamo.backends import lookup_backend
    from npdynamo.capture.hooks.decorator import compile_with

    recorder = Recorder()
    session = make_session(lookup_backend("eager"), recorder=recorder)
    for test in tests:
        method = getattr(type(test), test._testMethodName)
        compiled = compile_with(method, session, ("eager", False, None), REMAKE)
        setattr(test, test._testMethodName, types.MethodType(compiled, test))
    return recorder


def main(argv: list[str]) -> int:
    global TEST_TIMEOUT_S
    module_name, mode, out_path, *skip = argv
    TEST_TIMEOUT_S = float(os.environ.get("CONFORMANCE_TEST_TIMEOUT", TEST_TIMEOUT_S))
    signal.signal(signal.SIGALRM, _on_alarm)
    from test import support

    support.use_resources = []  # as regrtest without -u: no slow or resource-hungry tests
    warnings.simplefilter("ignore")  # as regrtest's default; a test checking warnings sets its own
    module = importlib.import_module(f"test.{module_name}")
    import npdynamo  # noqa: F401  (both modes: gc-heavy tests then walk the same heap)

    skipped = set(skip)
    # ``runner.py -k``: only the tests whose id contains one of these substrings
    wanted = [k for k in os.environ.get("CONFORMANCE_TEST_FILTER", "").split("\n") if k]
    tests = [t for t in method_tests(module) if t.id() not in skipped
             and (not wanted or any(k in t.id() for k in wanted))]
    recorder = None
    if mode == "compiled":
        recorder = compile_methods(tests)
    with open(out_path, "a") as out:
        result = Result(out, recorder)
        sys.stdout = io.StringIO()  # the tests' own output is not the report's
        unittest.TestSuite(tests).run(result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
