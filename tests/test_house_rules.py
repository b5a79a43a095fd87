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
