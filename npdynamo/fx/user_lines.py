"""The user's file and line for what generated code does on their behalf.

Part of ``fx``, used when a graph's function is compiled (``graph_module``) and by backends that
warn about a graph. Capture records each op's source line (``node.meta["source"]``); here a
graph's generated function gets that line in its line table and the user's file as its
filename, so a warning NumPy raises inside it (``overflow encountered in exp``) or a traceback
through it names the user's line, as the plain program would; and ``warn_at`` issues a warning
about a graph at its first op's line. Warnings go through the user module's
``__warningregistry__`` and ``__name__``, so filters by module and the ``"default"`` action's
once-per-line behave as for the plain program.
"""

from __future__ import annotations

import ast
import os
import sys
import warnings
from collections.abc import Iterable
from typing import Any

from npdynamo.fx.graph import Node

#: Location recorded by capture: (filename, line number, source text).
Source = tuple[str, int, str]


def node_source(node: Node) -> Source | None:
    source = node.meta.get("source")
    return source if source and source[1] else None


def user_module(filename: str) -> tuple[str, dict] | None:
    """(``__name__``, globals) of the loaded module whose file is ``filename``, if any: the
    file name a code object carries is usually its module's ``__file__`` as is; else compared
    through ``realpath`` (a symlink, a relative path), which costs system calls per module: each
    module's real path is worked out once per process (``_real_path``)."""
    modules = list(sys.modules.values())
    if _misses.get(filename) == len(modules):  # looked for in vain, and nothing new loaded
        return None
    for same in (lambda path: path == filename, _same_real_path(filename)):
        for module in modules:
            path = getattr(module, "__file__", None)
            namespace = getattr(module, "__dict__", None)
            if isinstance(path, str) and isinstance(namespace, dict) and same(path):
                return module.__name__, namespace
    _misses[filename] = len(modules)
    return None


#: file name -> how many modules were loaded when no module was found for it
_misses: dict[str, int] = {}


#: a module file's path -> its real path (a module's file is not moved while it is loaded)
_real_paths: dict[str, str] = {}


def _real_path(path: str) -> str:
    real = _real_paths.get(path)
    if real is None:
        real = _real_paths[path] = os.path.realpath(path)
    return real


def _same_real_path(filename: str):
    if filename.startswith("<"):
        return lambda path: False
    wanted = os.path.realpath(filename)
    return lambda path: _real_path(path) == wanted


def _registry_and_module(filename: str) -> tuple[dict | None, str | None]:
    found = user_module(filename)
    if found is None:
        return None, None
    name, namespace = found
    return namespace.setdefault("__warningregistry__", {}), name


def user_namespace(filename: str) -> dict[str, Any]:
    """Globals a generated function needs so that warnings raised in it are filtered and
    de-duplicated as they would be in the user's module."""
    registry, name = _registry_and_module(filename)
    if registry is None:
        return {}
    return {"__name__": name, "__warningregistry__": registry}


def compile_at_user_lines(source: str, line_sources: dict[int, Source]) -> tuple[Any, str] | None:
    """Compile ``source`` (generated) with the user's file and lines: each generated line in
    ``line_sources`` (1-based) gets its op's line, the lines between them (a ``del``, the
    ``return``) the line of the op before. None when the ops come from several files (a code
    object has one filename) or none has a source: the caller keeps the generated name."""
    files = {where[0] for where in line_sources.values()}
    if len(files) != 1:
        return None
    (user_file,) = files
    first = min(line_sources)
    lines: dict[int, int] = {}
    current = line_sources[first][1]
    for number in range(1, source.count("\n") + 2):
        if number in line_sources:
            current = line_sources[number][1]
        lines[number] = current
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) is None:
            continue
        node.lineno = lines.get(node.lineno, current)
        end = lines.get(node.end_lineno or 0, node.lineno)
        if end <= node.lineno:  # a span the new lines reverse or collapse: one line
            node.end_lineno = node.lineno
            if node.end_col_offset is not None and node.col_offset is not None:
                node.end_col_offset = max(node.end_col_offset, node.col_offset)
        else:
            node.end_lineno = end
    return compile(tree, user_file, "exec"), user_file


def warn_at(
    nodes: Iterable[Node], message: str, category: type[Warning], stacklevel: int = 2
) -> None:
    """Warn about these ops at the first one's source line (the user's), or, with no source,
    at the caller ``stacklevel`` frames up (as ``warnings.warn`` would)."""
    where = next((s for s in map(node_source, nodes) if s is not None), None)
    if where is None:
        warnings.warn(message, category, stacklevel=stacklevel + 1)
        return
    filename, lineno, _text = where
    registry, module = _registry_and_module(filename)
    warnings.warn_explicit(message, category, filename, lineno, module=module, registry=registry)
