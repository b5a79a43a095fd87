"""The user guide (``docs/*.md``) and the README say only what holds: their code blocks run as
shown, every figure names the benchmark command that prints it (or is a setting checked here),
and every test, example, benchmark, make target, environment variable and ``npdynamo`` name
they cite exists. Claims about behaviour name the test that checks them; the settings they
quote are checked against the code below."""

import contextlib
import io
import linecache
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import npdynamo
from tests.public_names import is_public, npdynamo_names

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: pages for contributors: they name internal modules on purpose
CONTRIBUTOR_PAGES = {"architecture.md", "development.md", "conformance.md"}
#: a measured figure: a ratio or a time
FIGURE = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?\s?(?:x|ms|s|us|µs)\b")


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _blocks(text: str, language: str = "python") -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def _paragraphs(text: str) -> list[str]:
    """Paragraphs outside code blocks; a table belongs to the paragraph that introduces it."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    out: list[str] = []
    for chunk in text.split("\n\n"):
        if chunk.lstrip().startswith("|") and out:
            out[-1] += "\n\n" + chunk
        else:
            out.append(chunk)
    return out


# -- code blocks run as shown ---------------------------------------------------------------------

_COMMON = "import numpy as np\nimport npdynamo\n"

#: what a page's code takes as given (the names its prose introduces), run before its blocks
_SETUP = {
    "capture.md": """
def step(x):
    return np.tanh(x) * 2.0
x = np.linspace(-1.0, 1.0, 8)
""",
    "control-flow.md": """
rng = np.random.default_rng(0)
A = rng.standard_normal((8, 8)) + 8 * np.eye(8)
b = rng.standard_normal(8)
""",
    "export.md": """
def loss_fn(params, x, y):
    logits = x @ params["w"]
    return ((logits - y) ** 2).mean()
rng = np.random.default_rng(0)
params = {"w": rng.standard_normal((784, 10))}
x, y = rng.standard_normal((32, 784)), rng.standard_normal((32, 10))
""",
    "gradients.md": """
rng = np.random.default_rng(0)
params = {"w1": rng.standard_normal((6, 5)), "b1": np.zeros(5),
          "w2": rng.standard_normal((5, 3)), "b2": np.zeros(3)}
x, y = rng.standard_normal((4, 6)), np.array([0, 2, 1, 0])
""",
    "inspecting.md": """
def fit(x, y, w):
    for step in range(3):
        err = x @ w - y
        print("loss", (err * err).mean())
        w = w - 0.1 * (x.T @ err)
    return w
def step_fn(x, w):
    return np.tanh(x @ w).sum(axis=1)
rng = np.random.default_rng(0)
x, y, w0, w = rng.standard_normal((8, 3)), rng.standard_normal(8), np.zeros(3), np.ones((3, 2))
""",
    "masked-reductions.md": "",
    "tiers.md": "u = np.linspace(0.0, 1.0, 64)\n",
}
#: what the page's last block leaves, checked after it ran (the blocks do what they say)
_AFTER = {
    "api.md": "assert layernorm(np.ones((2, 4)), np.ones(4), np.zeros(4)).shape == (2, 4)",
    "architecture.md": "assert step(np.ones(2), np.ones((3, 2)), 0.1).shape == (2,)",
    "capture.md": "assert step(x).shape == (8,)",
    "control-flow.md": "assert np.allclose(A @ jacobi(A, b, 1e-12), b)",
    "export.md": "assert ep is not None and ep2(np.ones((5, 784))).shape == (5, 10)",
    "gradients.md": "assert set(grads) == set(params) and np.isfinite(loss)",
    "inspecting.md": "assert report.entries and report.entries[0].graph is not None",
    "masked-reductions.md": (
        "d = np.array([0.0, 1.0, 2.0, 1e-9])\n"
        "r = d[d > 1e-6]\n"
        "assert np.isclose(energy(d), (4.0 * ((1/r)**12 - (1/r)**6)).sum())"
    ),
    "tiers.md": "assert u.shape == (64,)",
}


def _run(code: str, name: str, namespace: dict) -> None:
    """Run a block as a file of its own, its source findable as a user's is."""
    filename = f"<{name}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    exec(compile(code, filename, "exec"), namespace)  # noqa: S102 - the documentation's code


def _pages_with_code() -> list[str]:
    return [p.name for p in PAGES[1:] if _blocks(_text(p))]


def test_every_page_with_code_is_run_here():
    assert sorted(_pages_with_code()) == sorted(_AFTER)


@pytest.mark.parametrize("page", _pages_with_code())
def test_the_code_blocks_of_a_page_run_as_shown(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # files a block writes (report.html, predict.npdx) land here
    namespace: dict = {"__name__": f"docs_{page[:-3].replace('-', '_')}"}
    _run(_COMMON + _SETUP.get(page, ""), f"{page} setup", namespace)
    for i, block in enumerate(_blocks(_text(ROOT / "docs" / page))):
        if shutil.which("dot") is None:  # the page says: "when it is installed"
            block = block.replace('report.render("graphs.svg")', "None")
        with contextlib.redirect_stdout(io.StringIO()):
            _run(block, f"{page} block {i + 1}", namespace)
    _run(_AFTER[page], f"{page} check", namespace)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_code_users_copy_uses_only_public_names(page):
    used = set().union(*[npdynamo_names(b) for b in _blocks(_text(page))] or [set()])
    assert not {u for u in used if not is_public(u)}, page.name


# -- claims name what checks them ----------------------------------------------------------------

#: what checks a claim: a test, an example (tests/test_examples.py runs them), a benchmark
CHECKED_BY = re.compile(
    r"tests/[\w/.-]+|examples/\w+|python -m benchmarks\.\w+|make (?:bench|test)")
#: sections that only point elsewhere
_POINTERS = {("README.md", "## Contents"), ("README.md", "## Documentation")}


def test_every_section_of_the_user_guide_names_the_test_or_command_that_checks_it():
    unchecked = []
    for page in PAGES:
        if page.name in CONTRIBUTOR_PAGES:
            continue
        for section in re.split(r"\n(?=## )", _text(page))[1:]:  # the page's intro leads on
            heading = section.splitlines()[0]
            if (page.name, heading) not in _POINTERS and not CHECKED_BY.search(
                    re.sub(r"```.*?```", "", section, flags=re.S)):
                unchecked.append((page.name, heading))
    assert not unchecked


# -- figures name their command; settings are the code's ------------------------------------------

#: figures that are settings or examples of a message, not measurements: each checked below
_SETTINGS = {
    ("conformance.md", "30 s"), ("conformance.md", "3x"), ("conformance.md", "2 s"),
    ("scheduling.md", "40 µs"), ("scheduling.md", "100 µs"), ("numba.md", "0.1 ms"),
    ("numba.md", "1.25x"),
    ("tiers.md", "1 s"), ("tiers.md", "30 s"), ("tiers.md", "11.8 s"), ("tiers.md", "4.0 s"),
    ("tiers.md", "3.26x"), ("tiers.md", "10 s"),
}


def test_every_measured_figure_names_the_command_that_prints_it():
    for page in PAGES:
        for paragraph in _paragraphs(_text(page)):
            figures = {f for f in FIGURE.findall(paragraph) if (page.name, f) not in _SETTINGS}
            if figures:
                assert "python -m benchmarks." in paragraph or "make bench" in paragraph, (
                    f"{page.name}: {sorted(figures)} in:\n{paragraph}")


def test_the_commands_named_are_runnable_as_named():
    for page in PAGES:
        text = _text(page)
        assert "python benchmarks/" not in text, page.name  # python -m benchmarks.X, from the root
        for module in re.findall(r"python -m ((?:benchmarks|tests|npdynamo)\.[\w.]+)", text):
            assert (ROOT / (module.replace(".", "/") + ".py")).exists() or (
                ROOT / module.replace(".", "/") / "__main__.py").exists(), (page.name, module)
        targets = re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M)
        for target in re.findall(r"`make (\w[\w-]*)", text):
            assert target in targets, (page.name, target)


def test_the_settings_quoted_are_the_codes():
    import inspect

    from npdynamo import progress
    from npdynamo.backends import tuning
    from npdynamo.backends.numba import workers
    from npdynamo.backends.scheduler import forms
    from tests.conformance import runner

    # conformance.md: 30 s per test by default; "slow" is more than 3x plain plus 2 s
    source = inspect.getsource(runner)
    assert 'default=30.0, help="seconds per test"' in source
    assert '> 3 * p.get("time", 0.0) + 2.0' in source
    # scheduling.md: a plan saving at least 40 µs and 15% is timed
    assert forms.MIN_GAIN_NS == 40_000 and forms.MIN_SPEEDUP == 0.85
    # numba.md: dropped when twice as slow as the best and slower than 0.1 ms; six more rounds
    # within 1.25x
    assert (tuning.LOSER_FACTOR, tuning.FAST_CALL_S) == (2.0, 1e-4)
    assert (tuning.EXTRA_ROUNDS, tuning.CLOSE) == (6, 1.25)
    # scheduling.md: the scheduled form is kept when at least 5% faster than the best serial one
    assert tuning.SIDE_BY_SIDE_MARGIN == 0.95
    # scheduling.md and numba.md: a form holding the GIL must win by 5% (calls over 0.1 ms);
    # its contender's best is then the best of 8 timed calls
    assert tuning.GIL_MARGIN == 0.95 and tuning.TIMED_ROUNDS + tuning.EXTRA_ROUNDS == 8
    # tiers.md and numba.md: progress after 1 s, a line every two seconds; idle workers stop
    # after 30 s
    assert (progress.THRESHOLD_S, progress.INTERVAL_S, workers.KEEP_WARM_S) == (1.0, 2.0, 30.0)
    # tiers.md: compile_workers None is one worker per core, bounded by about 600 MB each
    assert workers.WORKER_MEMORY == 600 * 2**20 and npdynamo.config.compile_workers is None
    assert npdynamo.config.cache_size_limit == 8  # api.md
    # tiers.md: two calls of each, plain Python unless the eager tier's best is a tenth under
    # it; checked again 8 calls later, then 16, ..., while within half of each other
    from npdynamo.backends import tiers
    assert (tiers.SAMPLES, tiers.EAGER_BELOW, tiers.RECHECK, tiers.CLOSE) == (2, 0.9, 8, 1.5)
    # tiers.md: at exit the preparing thread ends its step, for up to 10 s
    from npdynamo.backends.numba import front
    assert front.EXIT_WAIT_S == 10.0


# -- what the pages cite exists ------------------------------------------------------------------

def test_every_file_cited_exists():
    for page in PAGES:
        cited = r"(?<![\w/.])((?:tests|examples|benchmarks|npdynamo|\.ci)/[\w/.-]*\w)"
        for path in re.findall(cited, _text(page)):
            assert (ROOT / path).exists() or (ROOT / (path + ".py")).exists(), (page.name, path)


def test_every_environment_variable_cited_is_read_by_the_code():
    code = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "npdynamo").rglob("*.py"))
    code += (ROOT / "Makefile").read_text() + "".join(
        p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py"))
    for page in PAGES:
        for name in set(re.findall(r"NPDYNAMO_[A-Z_]+", _text(page))):
            assert name in code, (page.name, name)


#: internals a user page names on purpose (what happens inside, a warning's class to filter)
_INTERNALS = {
    ("export.md", "npdynamo.capture"),
    ("export.md", "npdynamo.export.onnx_export.onnx_supported_ops"),
    ("gradients.md", "npdynamo.autograd.build_joint"),
}


def test_every_npdynamo_name_cited_exists_and_user_pages_cite_public_ones():
    import importlib

    for page in PAGES:
        for dotted in set(re.findall(r"`(npdynamo(?:\.\w+)+)", _text(page))):
            obj = npdynamo
            parts = dotted.split(".")
            for i, name in enumerate(parts[1:], 2):
                if hasattr(obj, name):
                    obj = getattr(obj, name)
                else:  # a submodule not imported yet
                    obj = importlib.import_module(".".join(parts[:i]))
            if page.name not in CONTRIBUTOR_PAGES and (page.name, dotted) not in _INTERNALS:
                assert is_public(dotted), (page.name, dotted)


def test_the_public_api_table_lists_every_public_name():
    table = _text(ROOT / "docs" / "api.md")
    listed = set(re.findall(r"`npdynamo\.(\w+)", table))
    errors = {"NpdynamoError", "Unsupported", "InvalidBackend", "InvalidArgument",
              "BackendCompilerFailed", "GradError"}
    missing = set(npdynamo.__all__) - listed - errors - {"EntryInfo", "GraphInfo", "Inspection",
                                                          "ExplainOutput"}
    assert not missing, sorted(missing)
    assert all(re.search(rf"`(npdynamo\.)?{name}`", table) for name in errors)


def test_ci_installs_the_browser_and_graphviz_and_the_summary_names_skips():
    run = (ROOT / ".ci" / "run").read_text()
    assert "apt-get install" in run and "chromium" in run and "graphviz" in run
    import tomllib

    out = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"][
        "addopts"]
    assert "-rs" in out  # skipped tests (no Chromium, no Graphviz) are named in the summary
    assert os.access(ROOT / ".ci" / "run", os.X_OK)


# -- output the pages show is what npdynamo prints -----------------------------------------------

_HEAT = '''import numpy as np


def heat(u, T):
    u = u.copy()
    # an explicit stencil: one fori_loop node
    for t in range(T):
        u[1:-1] = u[1:-1] + 0.1 * (u[:-2] - 2 * u[1:-1] + u[2:])
    for k in range(3):
        u = u * 0.5
    return u
'''


def test_the_loops_section_control_flow_shows_is_what_explain_prints():
    (shown,) = _blocks(_text(ROOT / "docs" / "control-flow.md"), "text")
    namespace: dict = {}
    _run(_HEAT, "heat.py", namespace)
    report = npdynamo.explain(namespace["heat"])(np.linspace(0.0, 1.0, 50), 2000)
    printed = str(report).splitlines()
    for line in shown.strip().splitlines():
        assert line.strip() in [p.strip() for p in printed], (line, str(report))


def _two_branches(x1, w1, x2, w2):
    y1 = np.maximum(x1 @ w1, 0.0)
    y2 = np.maximum(x2 @ w2, 0.0)
    return y1 + y2


def test_the_schedule_scheduling_shows_is_what_inspect_prints(monkeypatch):
    from npdynamo.backends import tuning

    def shape(line: str) -> str:  # the figures vary from run to run, and so does the choice
        line = re.sub(r"\d+(\.\d+)?", "N", line.strip())
        # (the why of a choice that goes either way, and of a race run again after compiles)
        line = re.sub(r"; (scheduled was less than N% faster|timed again once this process's "
                      r"compile work was over)", "", line)
        return re.sub(r"^runs as (serial|scheduled)", "runs as FORM", line)

    (shown,) = _blocks(_text(ROOT / "docs" / "scheduling.md"), "")
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "auto")
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "1")
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((200, 200)) for _ in range(4)]
    compiled = npdynamo.compile(_two_branches)
    # every call the tuner may take: its first round, all timed rounds, then the probation
    for _ in range(2 * (1 + 2 * (tuning.TIMED_ROUNDS + tuning.EXTRA_ROUNDS))
                   + tuning.PROBATION_CALLS + 2):
        compiled(*args)
    (graph,) = npdynamo.inspect(compiled).graphs
    printed = str(graph.report).splitlines()
    assert [shape(line) for line in shown.strip().splitlines()] == [shape(p) for p in printed]
