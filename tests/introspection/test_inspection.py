"""``npdynamo.inspect(fn)``: a compiled function's entries with their guards and graphs, what
each graph runs on, numba kernels compiled or loaded, recompile reasons; and the examples use
only the public API (nothing from ``npdynamo.capture`` or ``npdynamo.backends``)."""

import ast
import contextlib
import io
import os

import numpy as np
import pytest

import npdynamo

EXAMPLES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")
#: modules a user may import from: the package itself and the graph IR it documents
PUBLIC_MODULES = {"npdynamo", "npdynamo.fx", "npdynamo.fx.passes", "npdynamo.ops"}


def scaled_tanh(x, w):
    return np.tanh(x * w) + 1


def printing(x, steps):
    y = x * 2
    for step in range(steps):
        y = np.sin(y)
        print("step", step)
    return y.sum()


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_entries_guards_graphs_and_recompiles(backend):
    compiled = npdynamo.compile(scaled_tanh, backend=backend)
    assert npdynamo.inspect(compiled).entries == []  # not called yet
    compiled(np.ones(4), np.ones(4))
    compiled(np.ones(4) * 2, np.ones(4))  # new values: the same entry
    report = npdynamo.inspect(compiled)
    (entry,) = report.entries
    assert entry.function == "scaled_tanh" and entry.runs_python is None
    assert any("float64" in g for g in entry.guards)
    graph = entry.graph
    assert graph.backend == backend
    assert graph.ops == ["multiply", "tanh", "add"]
    assert "tanh" in graph.code
    assert report.recompile_reasons == []
    compiled(np.ones(3), np.ones(3))
    report = npdynamo.inspect(compiled)
    assert len(report.entries) == 2
    assert "expected 4, got 3" in report.recompile_reasons[-1]
    assert report.compile_time_s > 0
    if backend == "numba":
        assert graph.runs_on.startswith("numba: 1 kernel(s)")
        assert sum(report.kernels.values()) >= 1
    else:
        assert graph.runs_on == "eager backend" and report.kernels == {"compiled": 0,
                                                                       "from_disk": 0}
    assert "scaled_tanh: 2 entries, 2 graph(s)" in str(report)


def test_the_code_after_a_graph_break_is_named_by_the_users_line():
    compiled = npdynamo.compile(printing)
    with contextlib.redirect_stdout(io.StringIO()):
        compiled(np.ones(3), 2)
    labels = [e.function for e in npdynamo.inspect(compiled).entries]
    first_line = printing.__code__.co_firstlineno
    assert labels[0] == "printing"
    resumed = labels[1:]
    assert resumed and all(label.startswith("printing (from line ") for label in resumed)
    lines = {int(label.split("line ")[1].rstrip(")")) for label in resumed}
    assert lines <= set(range(first_line + 1, first_line + 6))
    assert not any("__resume_at" in str(e) for e in npdynamo.inspect(compiled).entries)


def test_an_entry_running_python_says_why(monkeypatch):
    monkeypatch.setattr(npdynamo.config, "force_python", True)
    compiled = npdynamo.compile(scaled_tanh)
    compiled(np.ones(2), np.ones(2))
    (entry,) = npdynamo.inspect(compiled).entries
    assert entry.graph is None and "force_python" in entry.runs_python
    assert "runs in Python: npdynamo.config.force_python" in str(npdynamo.inspect(compiled))


def test_an_entry_ending_at_a_break_names_it():
    compiled = npdynamo.compile(printing)
    with contextlib.redirect_stdout(io.StringIO()):
        compiled(np.ones(3), 2)
    text = str(npdynamo.inspect(compiled))
    assert "graph break at line" in text and "print" in text.split("graph break at line")[1]


def test_a_plain_function_is_refused_with_a_clear_error():
    with pytest.raises(npdynamo.InvalidArgument, match="npdynamo.inspect"):
        npdynamo.inspect(scaled_tanh)


def _private_imports(path: str) -> list[str]:
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("npdynamo"):
            if node.module not in PUBLIC_MODULES or any(a.name.startswith("_") for a in node.names):
                found.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names
                      if a.name.startswith("npdynamo") and a.name not in PUBLIC_MODULES]
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "npdynamo" and node.attr not in npdynamo.__all__):
            found.append(f"line {node.lineno}: npdynamo.{node.attr}")
    return found


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".py")))
def test_examples_import_nothing_private(name):
    assert _private_imports(os.path.join(EXAMPLES, name)) == []


def test_the_private_import_check_finds_internals(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import npdynamo\nfrom npdynamo.capture.hooks import compiled_entries\n"
                      "npdynamo.capture.hooks.recompile_reasons(f)\n")
    assert len(_private_imports(str(sample))) == 2
