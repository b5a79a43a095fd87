"""The README a newcomer starts from: short, with a table of contents, the two commands first,
``pip install``, a first example that runs as shown and is the function its benchmark command
times, every figure next to the command that prints it, links that resolve, nothing outside
the repository (no ``../shared``)."""

import ast
import contextlib
import io
import linecache
import re
from pathlib import Path

import numpy as np

import npdynamo
from benchmarks import readme_example

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").glob("*.md"))
#: pages other parts of the project are writing; the README's map links them already
PENDING = {"docs/tiers.md", "docs/scheduling.md"}
FIGURE = re.compile(r"\b\d+(?:\.\d+)?\s?(?:x|ms|s)\b")


def _code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def _anchor(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.lower())
    return "#" + text.replace(" ", "-")


def test_short_with_a_table_of_contents():
    assert len(README.splitlines()) < 200
    headings = [line[3:] for line in README.splitlines() if line.startswith("## ")]
    assert headings[0] == "Contents"
    listed = re.findall(r"^- \[(.+?)\]\((#.+?)\)$", README, re.M)
    assert [title for title, _ in listed] == headings[1:]
    assert all(anchor == _anchor(title) for title, anchor in listed)


def test_the_two_commands_come_first_then_pip_install():
    first = _code_blocks(README, "sh")[0]
    assert first.startswith("make demo") and "\nmake test" in first
    assert README.index("make demo") < README.index("pip install") < README.index("```python")


def _run(code: str, namespace: dict) -> None:
    """Run a README code block as a file of its own (its source findable, as a user's is)."""
    filename = f"<README.md block {len(linecache.cache)}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    exec(compile(code, filename, "exec"), namespace)  # noqa: S102 - the README's own code


def test_the_first_example_runs_on_numba_and_is_the_benchmarked_function():
    example = _code_blocks(README, "python")[0]
    assert 'backend="numba"' in example
    tree = ast.parse(example)
    (readme_fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    (bench_fn,) = [n for n in ast.parse(Path(readme_example.__file__).read_text()).body
                   if isinstance(n, ast.FunctionDef) and n.name == readme_fn.name]
    assert ast.dump(ast.Module(readme_fn.body, [])) == ast.dump(ast.Module(bench_fn.body, []))
    namespace: dict = {}
    _run(example, namespace)
    x, gamma, beta = namespace["x"], namespace["gamma"], namespace["beta"]
    want = readme_example.layernorm(x, gamma, beta)
    np.testing.assert_allclose(namespace["y"], want, rtol=1e-4, atol=1e-5)
    # the second block: explain and inspect, as shown
    with contextlib.redirect_stdout(io.StringIO()) as out:
        _run(_code_blocks(README, "python")[1].replace('"report.html"', "None"), namespace)
    assert "Graph count: 1" in out.getvalue()
    (graph,) = npdynamo.inspect(namespace["layernorm"]).graphs
    assert graph.backend == "numba" and graph.report.kernels >= 1


def test_every_figure_of_the_readme_names_the_command_that_prints_it():
    for paragraph in README.split("\n\n"):
        if paragraph.startswith("```") or not FIGURE.search(paragraph):
            continue
        assert "python -m benchmarks." in paragraph or "make bench" in paragraph, paragraph


def test_links_resolve_and_nothing_points_outside_the_repository():
    for page in [ROOT / "README.md", *DOCS]:
        text = page.read_text(encoding="utf-8")
        assert "../shared" not in text, page
        for target in re.findall(r"\]\(([^)#]+?)(?:#[^)]*)?\)", text):
            if target.startswith(("http://", "https://")):
                continue
            resolved = (page.parent / target).resolve()
            name = resolved.relative_to(ROOT).as_posix()
            assert resolved.exists() or name in PENDING, f"{page.name}: {target}"


def test_the_readme_links_every_user_guide_page():
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)\)", README))
    assert {f"docs/{p.name}" for p in DOCS} <= linked
    assert PENDING <= linked


def test_figures_found_wrong_are_gone():
    pages = README + "".join(p.read_text(encoding="utf-8") for p in DOCS)
    assert "npdynamo_report" not in pages  # not an attribute users have: npdynamo.inspect is
    for stale in ("about 0.3 s", "0.26 s here", "1.1 s to the first result"):
        assert stale not in pages


def test_the_dependencies_are_as_the_readme_says_and_torch_is_never_imported():
    import subprocess
    import sys
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=\[ ]", d)[0] for d in project["dependencies"]]
    assert names == ["numpy", "numba", "bytecode"]
    assert "depends on NumPy (2.x), numba and bytecode; it never imports torch" in README
    code = ("import sys, numpy as np, npdynamo\n"
            "npdynamo.compile(lambda x: np.tanh(x) + 1)(np.ones(3))\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"
