"""The explain report as a user sees it: a short ``str``, ``verbose()``, an HTML page opened by
headless Chromium (DOM dump and screenshot), DOT source and Graphviz rendering."""

import contextlib
import html.parser
import io
import os
import shutil
import subprocess

import numpy as np
import pytest

import npdynamo
from npdynamo.introspection import render as explain_render


def two_breaks_and_a_loop(x, steps):
    y = np.tanh(x) * 2.0
    for i in range(steps):
        y = y * 0.5 + 1.0
        print(i)  # a break in the loop
    kinds = np.unique(np.round(y))  # a break: the size of its result depends on the data
    return (kinds.sum() + y).mean()


def loop_with_a_branch(x):
    y = x * 2.0
    for _i in range(20):  # enough trips: one fori_loop node, the if in it a cond
        if y.sum() > 0:
            y = y * 0.5
        else:
            y = y + 1.0
    return y


#: where the browser test keeps its screenshot for a person to look at
ARTEFACTS = os.environ.get("NPDYNAMO_TEST_ARTEFACTS") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "build", "test-artefacts")


def _explain(backend="eager", steps=4):
    x = np.linspace(-1.0, 1.0, 16)
    with contextlib.redirect_stdout(io.StringIO()):
        return npdynamo.explain(two_breaks_and_a_loop, backend=backend)(x, steps)


def test_short_text_stays_short_and_verbose_lists_every_guard():
    out = _explain()
    short, full = str(out), out.verbose()
    assert len(short.splitlines()) <= 60, short
    assert "print() does input/output" in short and "Graph break count" in short
    assert "report.verbose() lists them" in short
    for line in out.guards:  # every guard is in the verbose text, none in the short one
        assert line.partition(": ")[2] in full
    assert "x.shape" not in short and "x.shape" in full


class _Parser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.text, self.open = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in ("meta", "br", "link", "img"):
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()

    def handle_data(self, data):
        self.text.append(data)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_html_page_is_self_contained_and_marks_source_breaks_and_kernels(backend, tmp_path):
    out = _explain(backend)
    path = tmp_path / "report.html"
    page = out.to_html(str(path))
    assert path.read_text(encoding="utf-8") == page
    parser = _Parser()
    parser.feed(page)
    assert parser.open == [], "unclosed tags"
    text = "".join(parser.text)
    assert "http://" not in page and "https://" not in page and "<script" not in page
    assert "y = y * 0.5 + 1.0" in text  # the user's source
    assert "npdynamo explain: two_breaks_and_a_loop" in text
    assert "print() does input/output" in text and "hint:" in text
    assert text.count("graph break 1") == 1 and "graph break 2" in text
    assert f"graph {out.graph_count}" in text
    if backend == "numba":
        assert "kernel 1 (" in text  # which kernel each op became
    else:
        assert "eager" in text


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt install chromium); "
                    ".ci/run installs it when it can")
def test_headless_chromium_loads_the_page_and_takes_a_screenshot(tmp_path):
    out = _explain("numba")
    page = tmp_path / "report.html"
    out.to_html(str(page))
    profile = str(tmp_path / "profile")
    url = page.as_uri()
    dom = subprocess.run(
        [CHROMIUM, *_FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    assert "y = y * 0.5 + 1.0" in dom and "print() does input/output" in dom
    assert "kernel 1 (" in dom
    shot = tmp_path / "report.png"
    subprocess.run(
        [CHROMIUM, *_FLAGS, f"--user-data-dir={profile}", f"--screenshot={shot}",
         "--window-size=1280,1600", url],
        capture_output=True, timeout=120, check=True,
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    # a loop, a branch in it, and breaks: kept for a person to look at (indentation, colours)
    with contextlib.redirect_stdout(io.StringIO()):
        branchy = npdynamo.explain(loop_with_a_branch, backend="numba")(np.ones(4))
    os.makedirs(ARTEFACTS, exist_ok=True)
    for name, report in (("explain-breaks", out), ("explain-loop-branch", branchy)):
        page = tmp_path / f"{name}.html"
        report.to_html(str(page))
        kept = os.path.join(ARTEFACTS, f"{name}.png")
        subprocess.run(
            [CHROMIUM, *_FLAGS, f"--user-data-dir={profile}", f"--screenshot={kept}",
             "--window-size=1280,1600", page.as_uri()],
            capture_output=True, timeout=120, check=True,
        )
        with open(kept, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def _source_rows(page: str) -> dict[str, str]:
    """source text -> the style of its code cell, from the report's source table."""
    rows = {}
    for row in page.split("<tr")[1:]:
        if "class='code'" not in row:
            continue
        cell = row.split("<td class='code'", 1)[1]
        style, _, text = cell.partition(">")
        rows[html.unescape(text.split("</td>", 1)[0])] = style
    return rows


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_source_keeps_its_indentation_and_subgraph_lines_get_their_graphs_colour(backend):
    with contextlib.redirect_stdout(io.StringIO()):
        out = npdynamo.explain(loop_with_a_branch, backend=backend)(np.ones(4))
    assert out.graph_count == 1
    page = out.to_html()
    assert ".src td.code{white-space:pre}" in page
    rows = _source_rows(page)
    colour = f"background:{explain_render.graph_colour(1)}"
    for line in ("y = x * 2.0", "if y.sum() > 0:", "y = y * 0.5", "y = y + 1.0"):
        (text,) = [t for t in rows if t.strip() == line]
        assert colour in rows[text], line  # in the fori_loop's and cond's subgraphs too
    assert "            y = y * 0.5" in rows  # indented as in the file: inside the if


def test_graph_colours_are_far_apart():
    colours = [explain_render.graph_colour(i) for i in range(1, 11)]
    rgb = [tuple(int(c[k:k + 2], 16) for k in (1, 3, 5)) for c in colours]
    distances = [sum((a - b) ** 2 for a, b in zip(p, q)) ** 0.5
                 for i, p in enumerate(rgb) for q in rgb[i + 1:]]
    assert min(distances) > 50


def test_numba_report_does_not_contradict_itself():
    with contextlib.redirect_stdout(io.StringIO()):
        out = npdynamo.explain(loop_with_a_branch, backend="numba")(np.ones(4))
    text = out.verbose()
    assert "loop fori_loop" in text
    assert "NumPy call fori_loop" not in text and "NumPy call cond" not in text
    assert "NumPy call tuple_item" not in text
    assert "not decided yet" not in text
    assert "0 kernel(s)" not in text


def test_dot_has_one_cluster_per_graph_and_per_kernel():
    out = _explain("numba")
    dot = out.to_dot()
    assert dot.startswith("digraph npdynamo {") and dot.rstrip().endswith("}")
    for i in range(1, out.graph_count + 1):
        assert f"cluster_g{i} " in dot
    assert "cluster_g1_k1" in dot and "->" in dot


def test_render_without_graphviz_says_what_to_install(tmp_path, monkeypatch):
    out = _explain()
    monkeypatch.setattr(explain_render.shutil, "which", lambda name: None)
    with pytest.raises(npdynamo.NpdynamoError, match="Graphviz"):
        out.render(str(tmp_path / "g.svg"))


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed (apt "
                    "install graphviz); .ci/run installs it when it can")
def test_render_with_graphviz_writes_the_file(tmp_path):
    path = str(tmp_path / "g.svg")
    assert _explain().render(path) == path and os.path.getsize(path) > 0


def test_guards_are_grouped_per_input():
    assert explain_render.guard_input("type(x) is ndarray") == "x"
    assert explain_render.guard_input("'a' in d") == "d"
    assert explain_render.guard_input("len(params) == 2") == "params"
