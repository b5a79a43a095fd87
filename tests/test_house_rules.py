"""``tools/house_rules.py``: each check finds what it looks for, and the package keeps them all."""

import ast
import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "tools" / "house_rules.py"
_spec = importlib.util.spec_from_file_location("house_rules", _PATH)
rules = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rules)


@pytest.mark.parametrize("check", rules.CHECKS, ids=lambda c: c.__name__)
def test_the_package_keeps_the_house_rule(check):
    assert check() == []


def test_an_exec_call_is_found_and_a_mention_is_not():
    tree = ast.parse("x = 'exec(y)'\nexec(code, env)\nobj.exec(1)\n")
    assert rules._calls(tree, "exec") == [2]


def test_exec_and_eval_outside_the_home_are_reported(tmp_path, monkeypatch):
    package = tmp_path / "npdynamo"
    package.mkdir()
    (package / "generated.py").write_text("exec(a)\neval(b)\n")
    (package / "other.py").write_text("x = eval(e, {})\nexec(c)\ny = 'eval(z)'\n")
    monkeypatch.setattr(rules, "PACKAGE", package)
    monkeypatch.setattr(rules, "GENERATED_CODE_HOME", package / "generated.py")
    assert rules.exec_outside_home() == [
        "npdynamo/other.py:2: exec outside npdynamo/generated.py",
        "npdynamo/other.py:1: eval outside npdynamo/generated.py",
    ]


def test_knob_reads_are_found_and_writes_for_a_child_are_not():
    tree = ast.parse(
        'a = os.environ.get("NPDYNAMO_X", "1")\n'
        'b = os.getenv("NPDYNAMO_Y")\n'
        'c = os.environ["NPDYNAMO_Z"]\n'
        'env = dict(os.environ, NPDYNAMO_PROGRESS="0")\n'
        'os.environ["NPDYNAMO_TIERED"] = "0"\n'
        'd = os.environ.get("HOME")\n')
    assert rules.environment_reads(tree) == [1, 2, 3]


def test_a_long_module_is_reported(tmp_path, monkeypatch):
    package = tmp_path / "npdynamo"
    package.mkdir()
    (package / "short.py").write_text("x = 1\n" * rules.MAX_LINES)
    (package / "long.py").write_text("x = 1\n" * (rules.MAX_LINES + 1))
    monkeypatch.setattr(rules, "PACKAGE", package)
    (found,) = rules.long_modules()
    assert found.startswith("npdynamo/long.py: 601 lines")


def test_a_capture_module_without_a_test_file_of_its_name_is_reported(tmp_path, monkeypatch):
    package, tests = tmp_path / "npdynamo", tmp_path / "tests"
    (package / "capture" / "flow").mkdir(parents=True)
    (tests / "capture").mkdir(parents=True)
    for name in ("__init__.py", "tested.py", "flow/loops.py", "flow/untested.py"):
        (package / "capture" / name).write_text("")
    for name in ("test_tested.py", "test_loops.py"):
        (tests / "capture" / name).write_text("")
    monkeypatch.setattr(rules, "PACKAGE", package)
    monkeypatch.setattr(rules, "TESTS", tests)
    assert rules.capture_modules_without_tests() == [
        "npdynamo/capture/flow/untested.py: no tests/**/test_untested.py (add one)"]
