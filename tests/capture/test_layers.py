"""capture/ is layered by module-level imports only: no import hidden inside a function."""

import ast
import pathlib

import npdynamo.capture

CAPTURE = pathlib.Path(npdynamo.capture.__file__).parent


def imports_inside_functions(path: pathlib.Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found.append(f"{path.relative_to(CAPTURE)}:{inner.lineno}")
    return found


def test_no_function_level_imports_in_capture():
    modules = sorted(CAPTURE.rglob("*.py"))
    assert len(modules) > 30
    found = [hit for path in modules for hit in imports_inside_functions(path)]
    assert found == []
