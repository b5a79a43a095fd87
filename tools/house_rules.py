"""House rules of the package that neither ruff nor import-linter can state (``make lint``).

* ``exec`` and ``eval`` are called only in ``npdynamo/generated.py``, the one home of generated
  code.
* ``NPDYNAMO_*`` environment variables are read only in ``npdynamo/config.py``
  (``config.environment``), so ``config.ENVIRONMENT`` lists them all.
* No module of the package is longer than ``MAX_LINES`` lines (split a module by job, not by
  joining lines).
* Tests mirror capture's modules: each module under ``npdynamo/capture`` has a test file of its
  name (``test_<module>.py``) somewhere under ``tests/``, as a newcomer looks for it.

Run as ``python tools/house_rules.py`` (exit status 1 and one line per breach) or through
``tests/test_house_rules.py``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "npdynamo"
#: the only module that may call ``exec`` or ``eval``
GENERATED_CODE_HOME = PACKAGE / "generated.py"
#: the only module that reads ``NPDYNAMO_*`` environment variables
CONFIG = PACKAGE / "config.py"
MAX_LINES = 600
TESTS = PACKAGE.parent / "tests"


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _calls(tree: ast.AST, name: str) -> list[int]:
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == name]


#: the builtins that run a source as code
RUNNERS = ("exec", "eval")


def exec_outside_home() -> list[str]:
    """``file:line`` of every ``exec`` or ``eval`` call outside ``npdynamo/generated.py``."""
    found = []
    for path in _modules():
        if path == GENERATED_CODE_HOME:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found += [f"{path.relative_to(PACKAGE.parent)}:{line}: {name} outside "
                  "npdynamo/generated.py" for name in RUNNERS for line in _calls(tree, name)]
    return found


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ"
            and isinstance(node.value, ast.Name) and node.value.id == "os")


def _knob(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and str(node.value).startswith("NPDYNAMO_")


def environment_reads(tree: ast.AST) -> list[int]:
    """Lines reading an ``NPDYNAMO_*`` variable: ``os.environ.get``/``os.getenv``/
    ``os.environ[...]`` with its name (writes, for a child process, are not reads)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and _knob(node.args[0]):
            func = node.func
            if isinstance(func, ast.Attribute) and (
                    (func.attr == "get" and _is_environ(func.value))
                    or (func.attr == "getenv" and isinstance(func.value, ast.Name)
                        and func.value.id == "os")):
                lines.append(node.lineno)
        elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
              and _is_environ(node.value) and _knob(node.slice)):
            lines.append(node.lineno)
    return lines


def knobs_outside_config() -> list[str]:
    """``file:line`` of every ``NPDYNAMO_*`` read outside ``npdynamo/config.py``."""
    found = []
    for path in _modules():
        if path == CONFIG:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found += [f"{path.relative_to(PACKAGE.parent)}:{line}: NPDYNAMO_* read outside "
                  "npdynamo/config.py (use config.environment)"
                  for line in environment_reads(tree)]
    return found


def long_modules() -> list[str]:
    """Modules longer than ``MAX_LINES`` lines."""
    found = []
    for path in _modules():
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > MAX_LINES:
            found.append(f"{path.relative_to(PACKAGE.parent)}: {count} lines (at most "
                         f"{MAX_LINES}: split it by job)")
    return found


def capture_modules_without_tests() -> list[str]:
    """Modules of ``npdynamo/capture`` with no ``test_<module>.py`` under ``tests/``."""
    tested = {path.name for path in TESTS.rglob("test_*.py")}
    return [f"{path.relative_to(PACKAGE.parent)}: no tests/**/test_{path.name} (add one)"
            for path in sorted((PACKAGE / "capture").rglob("*.py"))
            if path.name != "__init__.py" and f"test_{path.name}" not in tested]


CHECKS = (exec_outside_home, knobs_outside_config, long_modules, capture_modules_without_tests)


def breaches() -> list[str]:
    return [line for check in CHECKS for line in check()]


if __name__ == "__main__":
    lines = breaches()
    print("\n".join(lines) or "house rules: all kept")
    sys.exit(1 if lines else 0)
