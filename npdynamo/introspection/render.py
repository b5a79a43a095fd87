"""Rendering an ``explain`` report: the short text, the full text, an HTML page and DOT source.

``explain.py`` collects what one captured run produced (``ExplainOutput``); this module only
reads it. The short text (``str(report)``) fits a terminal; ``verbose()`` lists everything;
``to_html`` writes one self-contained page (no network, no external assets) with the user's
source coloured by the graph each line went into and every break marked at its line;
``to_dot`` draws the graphs with their fusion groups as clusters.
"""

from __future__ import annotations

import html
import inspect
import linecache
import os
import re
import shutil
import subprocess
from collections.abc import Iterable

from npdynamo.backends.numba.report import NumbaReport
from npdynamo.backends.scheduler import ScheduleReport
from npdynamo.errors import NpdynamoError
from npdynamo.fx.subgraphs import subgraphs_of
from npdynamo.ops.meta import ScalarMeta
from npdynamo.ops.symbolic import SymInt

#: The short text lists this many groups of breaks and of graphs, then says how many more.
SHORT_LIST = 12


# -- text ----------------------------------------------------------------------------------------
def short_text(out) -> str:
    """Counts, breaks, ops per graph and guard counts: a screenful for a small function."""
    lines = _head(out)
    groups = _break_groups(out.break_reasons)
    if groups:
        lines.append("Break reasons:")
        lines += _capped(
            [_break_line(i, same) for i, same in enumerate(groups, 1)], "break reasons"
        )
    if out.python_frames:
        lines.append("Frames that ran in Python:")
        lines += _capped([f"  - {text}" for text in out.python_frames], "frames")
    lines += _loop_lines(out, capped=True)
    if out.graphs:
        lines.append("Ops per graph:")
        lines += _capped(grouped_op_lines(out.graphs, out.ops_per_graph), "graphs")
    kernels = [r for r in out.backend_reports if isinstance(r, NumbaReport)]
    if kernels:
        total = sum(r.kernels for r in kernels)
        fell = sum(1 for r in kernels if r.fell_back)
        lines.append(f"Backend: {total} numba kernel(s) in {len(kernels)} graph(s)"
                     + (f", {fell} graph(s) fell back to NumPy" if fell else ""))
        # per loop: one compiled program, or the Python loop and why
        lines += [f"  {loop}" for r in kernels for loop in r.loops]
    lines += _schedule_lines(out.backend_reports)
    if out.aot_functions:
        lines.append(f"AOT autograd: {len(out.aot_functions)} forward/backward pair(s)")
    dynamic = dynamic_inputs(out.graphs)
    if dynamic:
        lines.append("Dynamic (no guard on their values): " + ", ".join(dynamic))
    by_function = guards_by_function(out.guards)
    if by_function:
        counts = ", ".join(f"{name} {len(g)}" for name, g in by_function.items())
        lines.append(f"Guards: {sum(len(g) for g in by_function.values())} ({counts}); "
                     "report.verbose() lists them")
    return "\n".join(lines)


def _schedule_lines(reports: list) -> list[str]:
    """The graphs the scheduler may run on several streams: their plan's first line and which
    steps it runs side by side (``backends/scheduler``; ``verbose()`` has every stream)."""
    lines = []
    for i, report in enumerate(reports, 1):
        schedule = report.schedule if isinstance(report, NumbaReport) else report  # eager's is it
        if not isinstance(schedule, ScheduleReport) or not schedule.plan:
            continue
        plan = schedule.plan
        lines.append(f"Schedule of graph {i}: {plan[0]}")
        lines += [f"  {line}" for line in plan[1:] if line.startswith("side by side")]
    return lines


def _loop_lines(out, capped: bool) -> list[str]:
    loops = [f"  - {text}" for text in out.loops]
    if not loops:
        return []
    return ["Loops and branches:", *(_capped(loops, "loops") if capped else loops)]


def verbose_text(out) -> str:
    """Everything the report holds: every break, graph, backend decision and guard."""
    lines = _head(out)
    groups = _break_groups(out.break_reasons)
    if groups:
        lines.append("Break reasons:")
        lines += [_break_line(i, same) for i, same in enumerate(groups, 1)]
    if out.python_frames:
        lines.append("Frames that ran in Python:")
        lines += [f"  - {text}" for text in out.python_frames]
    lines += _loop_lines(out, capped=False)
    if out.graphs:
        lines.append("Ops per graph:")
        lines += grouped_op_lines(out.graphs, out.ops_per_graph)
    if any(r is not None for r in out.backend_reports):
        lines.append("Backend:")
        for i, report in enumerate(out.backend_reports, 1):
            text = str(report) if report is not None else "runs the graph's NumPy code"
            lines.append(f"  graph {i}: " + text.replace("\n", "\n    "))
    reports = [f.report() for f in out.aot_functions if f.partitions]
    if reports:
        lines.append("Forward/backward partitions (what the backward saves):")
        lines += ["  " + r.replace("\n", "\n  ") for r in reports]
    dynamic = dynamic_inputs(out.graphs)
    if dynamic:
        lines.append("Dynamic (no guard on their values): " + ", ".join(dynamic))
    by_function = guards_by_function(out.guards)
    if by_function:
        lines.append("Guards:")
        for name, guards in by_function.items():
            lines.append(f"  {name}:")
            lines += [f"    {g}" for g in guards]
    return "\n".join(lines)


def _head(out) -> list[str]:
    return [
        f"Graph count: {out.graph_count}",
        f"Graph break count: {out.graph_break_count}",
        f"Op count: {sum(out.ops_per_graph)}",
        f"Compile time: {out.compile_time_s * 1e3:.1f} ms",
    ]


def _break_groups(reasons: list) -> list[list]:
    """Breaks met more than once (a loop's iterations) grouped by place and reason."""
    groups: dict[tuple, list] = {}
    for reason in reasons:
        groups.setdefault((reason.filename, reason.lineno, reason.reason), []).append(reason)
    return list(groups.values())


def _break_line(i: int, same: list) -> str:
    times = f" (x{len(same)})" if len(same) > 1 else ""
    return f"  {i}.{times} " + str(same[0]).replace("\n", "\n   ")


def _capped(lines: list[str], what: str) -> list[str]:
    if len(lines) <= SHORT_LIST:
        return lines
    return lines[:SHORT_LIST] + [f"  ... {len(lines) - SHORT_LIST} more {what} (verbose())"]


def grouped_op_lines(graphs: list, counts: list[int]) -> list[str]:
    """One line per run of consecutive graphs with the same ops (a loop's resume point compiled
    once per value of a counter gives several)."""
    runs: list[list] = []  # [first index, last index, text]
    for i, (gm, n) in enumerate(zip(graphs, counts), 1):
        text = f"{n} ops: {', '.join(_op_name(node) for node in _calls(gm))}"
        if runs and runs[-1][2] == text:
            runs[-1][1] = i
        else:
            runs.append([i, i, text])
    return [
        f"  graph {a}: {text}" if a == b else f"  graphs {a}-{b} (x{b - a + 1}): {text}"
        for a, b, text in runs
    ]


def dynamic_inputs(graphs: list) -> list[str]:
    """The graph inputs that are symbolic: ``x.shape[0] (s0)`` for a dimension, ``lr (float)``
    for a dynamic scalar, each once, in the order the graphs read them."""
    found: list[str] = []
    for gm in graphs:
        for node in gm.graph.placeholders:
            meta = node.meta.get("val")
            name = node.meta.get("source_name", node.name)
            name = re.sub(r"L\['(\w+)'\]", r"\1", str(name))
            if isinstance(meta, ScalarMeta):
                text = f"{name} ({meta.type.__name__})"
                if text not in found:
                    found.append(text)
            for d, size in enumerate(getattr(meta, "shape", ())):
                if isinstance(size, SymInt):
                    text = f"{name}.shape[{d}] ({size})"
                    if text not in found:
                        found.append(text)
    return found


def guards_by_function(guards: Iterable[str]) -> dict[str, list[str]]:
    """``"fn: guard"`` lines grouped by function, duplicates dropped, order kept."""
    by_function: dict[str, list[str]] = {}
    for line in guards:
        name, _, guard = line.partition(": ")
        seen = by_function.setdefault(name, [])
        if guard not in seen:
            seen.append(guard)
    return by_function


_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_NAME = re.compile(r"[A-Za-z_]\w*")
_NOT_INPUTS = frozenset({"type", "len", "id", "isinstance", "not", "is", "in", "and", "or"})


def guard_input(guard: str) -> str:
    """The input a guard is about: its first name that is not a builtin or keyword."""
    for name in _NAME.findall(_STRING.sub("", guard)):
        if name not in _NOT_INPUTS:
            return name
    return "(other)"


def _calls(gm) -> list:
    return [node for node in gm.graph.nodes if node.op == "call_function"]


def _op_name(node) -> str:
    return getattr(node.target, "name", str(node.target))


# -- HTML ----------------------------------------------------------------------------------------
_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1f24;background:#fff}
h1{font-size:20px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
code,pre,.src td.code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}
.src td.code{white-space:pre}
table{border-collapse:collapse}td,th{padding:2px 8px;text-align:left;vertical-align:top}
.src td.no{color:#888;text-align:right;user-select:none}
.src tr.brk td.code{border-left:4px solid #d1242f}
.chip{display:inline-block;padding:0 6px;margin-right:3px;border-radius:8px;font-size:11px;
color:#000;border:1px solid #0002}
.note{background:#fff1f0;border:1px solid #ffb3b0;border-radius:4px;padding:4px 8px;margin:2px 0}
.note .hint{color:#555}.muted{color:#777;white-space:pre-line}.ops td{border-bottom:1px solid #eee}
summary{cursor:pointer}.swatch{display:inline-block;width:12px;height:12px;border-radius:3px;
margin-right:6px;vertical-align:middle;border:1px solid #0003}
"""


#: light backgrounds far apart in hue and lightness, so no two graphs of a report look alike
_PALETTE = ("#8ec5ff", "#ffb86b", "#8fe388", "#ff8f8f", "#c9a7f5", "#fff176", "#6fe0d8",
            "#f7a6d8", "#c8b89a", "#d9d9d9")


def graph_colour(i: int) -> str:
    """A light background colour for graph ``i`` (1-based): the palette's, then hues."""
    if 1 <= i <= len(_PALETTE):
        return _PALETTE[i - 1]
    return f"hsl({(i * 137) % 360}, 60%, 82%)"


def to_html(out, title: str | None = None) -> str:
    """The whole report as one self-contained HTML page."""
    fn = out.function
    name = title or getattr(fn, "__qualname__", None) or "compiled function"
    e = html.escape
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>npdynamo explain: {e(name)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>npdynamo explain: <code>{e(name)}</code></h1>",
        "<p>" + " &middot; ".join(e(line) for line in _head(out)) + "</p>",
        _legend(out),
        _source_section(out),
        _breaks_section(out),
        _graphs_section(out),
        _python_section(out),
        _aot_section(out),
        _guards_section(out),
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p)


def _legend(out) -> str:
    if not out.graphs:
        return ""
    items = "".join(
        f"<span class='chip' style='background:{graph_colour(i)}'>graph {i}</span>"
        for i in range(1, len(out.graphs) + 1)
    )
    return f"<p>Colours: {items}</p>"


def _lines_by_graph(out) -> dict[tuple[str, int], list[int]]:
    """(filename, line) -> the graphs (1-based) holding an op from that line."""
    where: dict[tuple[str, int], list[int]] = {}
    for i, gm in enumerate(out.graphs, 1):
        for node in _calls_within(gm):
            source = node.meta.get("source")
            if source:
                graphs = where.setdefault((str(source[0]), int(source[1])), [])
                if i not in graphs:
                    graphs.append(i)
    return where


def _calls_within(gm) -> list:
    """The op nodes of ``gm`` and of its loops' and branches' subgraphs (their lines belong
    to the graph holding the loop or branch)."""
    found = []
    for node in _calls(gm):
        found.append(node)
        for sub in subgraphs_of(node):
            found += _calls_within(sub)
    return found


def _source_section(out) -> str:
    by_graph = _lines_by_graph(out)
    breaks: dict[tuple[str, int], list[tuple[int, list]]] = {}
    for i, same in enumerate(_break_groups(out.break_reasons), 1):
        first = same[0]
        breaks.setdefault((str(first.filename), first.lineno), []).append((i, same))
    shown = _shown_lines(out, set(by_graph) | set(breaks))
    if not shown:
        return "<h2>Source</h2><p class='muted'>No source lines are known for this run.</p>"
    e = html.escape
    parts = ["<h2>Source</h2>"]
    for filename, numbers in shown.items():
        parts.append(f"<p class='muted'>{e(filename)}</p><table class='src'>")
        previous = None
        for lineno in numbers:
            if previous is not None and lineno != previous + 1:
                parts.append("<tr><td class='no'>&hellip;</td><td></td><td></td></tr>")
            previous = lineno
            text = linecache.getline(filename, lineno).rstrip("\n")
            graphs = by_graph.get((filename, lineno), [])
            marks = breaks.get((filename, lineno), [])
            style = f" style='background:{graph_colour(graphs[0])}'" if graphs else ""
            chips = "".join(
                f"<span class='chip' style='background:{graph_colour(g)}'>g{g}</span>"
                for g in graphs
            )
            row_class = " class='brk'" if marks else ""
            parts.append(f"<tr{row_class}><td class='no'>{lineno}</td><td>{chips}</td>"
                         f"<td class='code'{style}>{e(text) or '&nbsp;'}</td></tr>")
            for i, same in marks:
                times = f" (x{len(same)})" if len(same) > 1 else ""
                hint = (f"<br><span class='hint'>hint: {e(same[0].hint)}</span>"
                        if same[0].hint else "")
                parts.append(f"<tr><td></td><td></td><td><div class='note'>graph break {i}"
                             f"{times}: {e(same[0].reason)}{hint}</div></td></tr>")
        parts.append("</table>")
    return "\n".join(parts)


def _shown_lines(out, referenced: set[tuple[str, int]]) -> dict[str, list[int]]:
    """Per file, the lines to show: the whole compiled function, and every other line an op or
    a break came from (inlined helpers)."""
    shown: dict[str, set[int]] = {}
    fn = out.function
    if fn is not None:
        try:
            lines, first = inspect.getsourcelines(fn)
            filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
            shown.setdefault(filename, set()).update(range(first, first + len(lines)))
        except (OSError, TypeError):
            pass
    for filename, lineno in referenced:
        if linecache.getline(filename, lineno):
            shown.setdefault(filename, set()).add(lineno)
    return {name: sorted(numbers) for name, numbers in shown.items()}


def _breaks_section(out) -> str:
    groups = _break_groups(out.break_reasons)
    if not groups:
        return "<h2>Graph breaks</h2><p>None: every op went into a graph.</p>"
    e = html.escape
    items = []
    for i, same in enumerate(groups, 1):
        first = same[0]
        times = f" (x{len(same)})" if len(same) > 1 else ""
        where = f"{os.path.basename(str(first.filename))}:{first.lineno}"
        hint = f"<br><span class='hint'>hint: {e(first.hint)}</span>" if first.hint else ""
        items.append(f"<li><div class='note'><b>{i}.</b>{times} <code>{e(where)}</code> "
                     f"{e(first.reason)}{hint}</div></li>")
    return "<h2>Graph breaks</h2><ol style='list-style:none;padding:0'>" + "".join(items) + "</ol>"


def _node_kernels(report) -> dict[str, str]:
    """node name -> what the numba backend made of it."""
    if not isinstance(report, NumbaReport) or report.fell_back:
        return {}
    kernels: dict[str, str] = {}
    for k, names in enumerate(report.group_nodes, 1):
        parallel = report.parallel[k - 1] if k - 1 < len(report.parallel) else False
        threads = {True: "parallel", False: "serial", None: "threads chosen per call"}[parallel]
        for name in names:
            kernels[name] = f"kernel {k} ({threads})"
    for name, why in report.not_fused:
        kernels[name] = f"NumPy call: {why}"
    for record in report.loops:
        kernels[record.node] = ("one compiled loop (numba)" if record.compiled
                                else f"Python loop: {record.why}")
    return kernels


def _graphs_section(out) -> str:
    if not out.graphs:
        return ""
    e = html.escape
    parts = ["<h2>Graphs</h2>"]
    for i, gm in enumerate(out.graphs, 1):
        report = out.backend_reports[i - 1] if i - 1 < len(out.backend_reports) else None
        kernels = _node_kernels(report)
        backend = e(str(report)) if report is not None else "runs the graph's NumPy code (eager)"
        parts.append(f"<details{' open' if i <= 3 else ''}><summary><span class='swatch' "
                     f"style='background:{graph_colour(i)}'></span><b>graph {i}</b>: "
                     f"{len(_calls(gm))} ops</summary><p class='muted'>{backend}</p>"
                     "<table class='ops'><tr><th>node</th><th>op</th><th>shape</th>"
                     "<th>dtype</th><th>line</th><th>became</th></tr>")
        for node in _calls(gm):
            meta = node.meta.get("val")
            shape = e(str(getattr(meta, "shape", ""))) if meta is not None else ""
            dtype = e(str(getattr(meta, "dtype", ""))) if meta is not None else ""
            source = node.meta.get("source")
            line = (f"{e(os.path.basename(str(source[0])))}:{source[1]}" if source else "")
            default = "NumPy" if report is None else ""
            if subgraphs_of(node) and node.name not in kernels:
                default = "runs its subgraphs (below)" if report is not None else default
            became = e(kernels.get(node.name, default))
            parts.append(f"<tr><td><code>{e(node.name)}</code></td><td>{e(_op_name(node))}</td>"
                         f"<td>{shape}</td><td>{dtype}</td><td>{line}</td><td>{became}</td></tr>")
        parts.append(f"</table><details><summary>generated code</summary><pre>{e(gm.code)}"
                     "</pre></details></details>")
    return "\n".join(parts)


def _python_section(out) -> str:
    if not out.python_frames:
        return ""
    items = "".join(f"<li>{html.escape(text)}</li>" for text in out.python_frames)
    return f"<h2>Ran in Python</h2><ul>{items}</ul>"


def _aot_section(out) -> str:
    reports = [f.report() for f in out.aot_functions if f.partitions]
    if not reports:
        return ""
    body = "".join(f"<pre>{html.escape(r)}</pre>" for r in reports)
    return f"<h2>Forward / backward split (AOT autograd)</h2>{body}"


def _guards_section(out) -> str:
    by_function = guards_by_function(out.guards)
    if not by_function:
        return ""
    e = html.escape
    parts = ["<h2>Guards</h2>"]
    for name, guards in by_function.items():
        per_input: dict[str, list[str]] = {}
        for guard in guards:
            per_input.setdefault(guard_input(guard), []).append(guard)
        parts.append(f"<p><code>{e(name)}</code>: {len(guards)} guards</p><ul>")
        for source, items in per_input.items():
            body = e("\n".join(items))
            parts.append(f"<li><details><summary><code>{e(source)}</code> ({len(items)})"
                         f"</summary><pre>{body}</pre></details></li>")
        parts.append("</ul>")
    return "\n".join(parts)


# -- DOT -----------------------------------------------------------------------------------------
def to_dot(out) -> str:
    """Graphviz DOT source: one cluster per graph, fusion groups as nested clusters."""
    lines = ["digraph npdynamo {", "  rankdir=TB; node [shape=box, fontname=monospace];"]
    for i, gm in enumerate(out.graphs, 1):
        report = out.backend_reports[i - 1] if i - 1 < len(out.backend_reports) else None
        groups = (list(report.group_nodes)
                  if isinstance(report, NumbaReport) and not report.fell_back else [])
        grouped = {name for names in groups for name in names}
        lines.append(f'  subgraph cluster_g{i} {{ label="graph {i}"; style=filled; '
                     f'color="{graph_colour(i)}";')
        for k, names in enumerate(groups, 1):
            lines.append(f'    subgraph cluster_g{i}_k{k} {{ label="kernel {k}"; '
                         'style=dashed; color=black;')
            lines += [f'      "g{i}.{n}";' for n in names]
            lines.append("    }")
        for node in gm.graph.nodes:
            label = node.name if node.op != "call_function" else f"{node.name}\\n{_op_name(node)}"
            if node.name not in grouped:
                lines.append(f'    "g{i}.{node.name}";')
            lines.append(f'    "g{i}.{node.name}" [label="{_dot_escape(label)}"];')
        for node in gm.graph.nodes:
            for used in node.all_input_nodes:
                lines.append(f'    "g{i}.{used.name}" -> "g{i}.{node.name}";')
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_escape(text: str) -> str:
    return text.replace('"', '\\"')


def render(out, path: str) -> str:
    """Draw ``to_dot`` with Graphviz into ``path`` (format from its extension); returns path."""
    dot = shutil.which("dot")
    if dot is None:
        raise NpdynamoError(
            "report.render() needs Graphviz's `dot` program, which is not installed; install "
            "Graphviz (e.g. `apt install graphviz`) or write report.to_dot() to a file yourself"
        )
    fmt = os.path.splitext(path)[1].lstrip(".") or "svg"
    subprocess.run([dot, f"-T{fmt}", "-o", path], input=to_dot(out), text=True, check=True)
    return path
