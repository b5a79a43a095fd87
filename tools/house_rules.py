"""House rules of the package that neither ruff nor import-linter can state (``make lint``).

* ``exec`` is called only in ``npdynamo/generated.py``, the one home of generated code.

Run as ``python tools/house_rules.py`` (exit status 1 and one line per breach) or through
``tests/test_house_rules.py``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "npdynamo"
#: the only module that may call ``exec``
GENERATED_CODE_HOME = PACKAGE / "generated.py"


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _calls(tree: ast.AST, name: str) -> list[int]:
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == name]


def exec_outside_home() -> list[str]:
    """``file:line`` of every ``exec`` call outside ``npdynamo/generated.py``."""
    found = []
    for path in _modules():
        if path == GENERATED_CODE_HOME:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found += [f"{path.relative_to(PACKAGE.parent)}:{line}: exec outside npdynamo/generated.py"
                  for line in _calls(tree, "exec")]
    return found


CHECKS = (exec_outside_home,)


def breaches() -> list[str]:
    return [line for check in CHECKS for line in check()]


if __name__ == "__main__":
    lines = breaches()
    print("\n".join(lines) or "house rules: all kept")
    sys.exit(1 if lines else 0)
