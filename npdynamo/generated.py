"""One home for generated code: every Python source npdynamo writes is compiled and run here.

Every stage generates code: fx the function of a graph, capture the guard checks, entry runners,
rebuilders, frame dispatchers and resume hand-overs, the numba backend its programs, loop
functions and kernel modules, the scheduler its scheduled forms. They all name the objects their
source refers to with a ``Namespace`` and run the source with ``define``/``run``, which give it a
``<npdynamo-...>`` file name (the region hook never captures code of such a file), register its
text with ``linecache`` (tracebacks and warnings show the generated line) and drop that entry
again when what the source defined is collected. ``dispatch_source`` writes the unrolled
"first check that holds runs" function of resume hand-overs (the frame dispatchers instead loop
over their entry list inside a code template: ``capture/hooks/dispatch.py``).

A leaf: it imports only the standard library, so any stage may import it, and it is the only
module of the package that calls ``exec`` or ``eval`` (``tools/house_rules.py`` checks that).
"""

from __future__ import annotations

import itertools
import keyword
import linecache
import re
import weakref
from collections.abc import Callable, Iterable, Sequence
from types import CodeType
from typing import Any

_file_ids = itertools.count()


def to_identifier(hint: str) -> str:
    """``hint`` turned into a valid Python identifier that is not a keyword."""
    name = re.sub(r"\W+", "_", hint).strip("_") or "node"
    if name[0].isdigit():
        name = "_" + name
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        name += "_"
    return name


class Namespace:
    """Names for the objects a generated source refers to; ``values`` becomes its globals.

    ``bind`` gives the same name to the same object. Names are ``_<hint>`` (``_<hint>_1``, ...
    when taken); with ``numbered=True`` they are ``<hint><count>`` instead (short names for
    sources with many constants, such as guard checks). ``reserved`` names (the source's own
    locals and parameters) are never given out."""

    def __init__(self, base: dict | None = None, reserved: Sequence[str] | set[str] = (),
                 *, numbered: bool = False) -> None:
        self.values: dict[str, object] = dict(base or {})
        self.taken = Names(reserved)
        self.taken.update(self.values)
        self.numbered = numbered
        self._by_id: dict[int, str] = {}

    def fresh(self, hint: str) -> str:
        """A name not taken yet, made from ``hint`` (a local or a global of the source)."""
        return unique_name("_" + to_identifier(hint), self.taken)

    def bind(self, obj: object, hint: str = "K") -> str:
        """A global name that holds ``obj`` (the same name for the same object)."""
        key = id(obj)
        name = self._by_id.get(key)
        if name is not None:
            return name
        if self.numbered:
            name = f"{hint}{len(self.values)}"
            while name in self.taken:
                name += "_"
            self.taken.add(name)
        else:
            name = self.fresh(hint)
        self.values[name] = obj
        self._by_id[key] = name
        return name


class Names(set):
    """The names taken in one generated source, with the next number to try for each base, so
    that asking for the same base a thousand times (an ONNX model's ``const``) does not scan
    ``base_1``, ``base_2``, ... from the start each time. A plain set of names otherwise."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        super().__init__(names)
        self.next_number: dict[str, int] = {}


def unique_name(base: str, taken: Names) -> str:
    """``base``, or ``base_1``, ``base_2``, ... : the first not in ``taken`` (then taken).

    Every name of ``base`` below the number ``taken`` remembers for it is taken already, so
    the search starts there: linear in the names asked for, not quadratic."""
    count = taken.next_number.get(base, 0)
    name = base if count == 0 else f"{base}_{count}"
    while name in taken:
        count += 1
        name = f"{base}_{count}"
    taken.next_number[base] = count + 1
    taken.add(name)
    return name


def fresh_name(base: str, taken: set[str]) -> str:
    """``base``, with underscores appended until it is not in ``taken`` (then taken)."""
    name = base
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def file_name(label: str) -> str:
    """A new ``<npdynamo-label-N>`` file name for a generated source."""
    return f"<npdynamo-{label}-{next(_file_ids)}>"


def _register_lines(source: str, filename: str, owner: object) -> None:
    # An entry with no mtime is never evicted by linecache.checkcache; drop it with its owner.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    weakref.finalize(owner, linecache.cache.pop, filename, None)


def run(source: str | CodeType, namespace: dict[str, Any], *, filename: str | None = None,
        label: str = "code", lines: bool = True, owner: object = None) -> dict[str, Any]:
    """Run ``source`` (text, or a code object compiled from it) with ``namespace`` as its
    globals and return them. Text is compiled as file ``filename`` (else a new one named after
    ``label``); with ``lines`` its text is registered with ``linecache`` for as long as
    ``owner`` lives (an object the source defined, or the namespace's module)."""
    if isinstance(source, CodeType):
        code = source
    else:
        filename = filename or file_name(label)
        code = compile(source, filename, "exec")
        if lines and owner is not None:
            _register_lines(source, filename, owner)
    exec(code, namespace)
    return namespace


def define(source: str | CodeType, name: str, namespace: dict[str, Any] | Namespace, *,
           filename: str | None = None, label: str = "code", lines: bool = True,
           text: str | None = None) -> Callable:
    """The function ``name`` that ``source`` defines, run with ``namespace`` as its globals
    (a ``Namespace``'s values are copied). Its source text is ``__npdynamo_source__`` (``text``
    when ``source`` is a code object) and, with ``lines``, in ``linecache`` while it lives."""
    scope = dict(namespace.values) if isinstance(namespace, Namespace) else namespace
    if isinstance(source, CodeType):
        code, text = source, text or ""
    else:
        filename = filename or file_name(label)
        code, text = compile(source, filename, "exec"), source
    exec(code, scope)
    fn = scope[name]
    fn.__npdynamo_source__ = text
    if lines and filename is not None and not isinstance(source, CodeType):
        _register_lines(text, filename, fn)
    return fn


def evaluate(expression: str, namespace: dict[str, Any]) -> Any:
    """The value of the generated ``expression`` (a guard, a source's read) with ``namespace``
    as its globals. For the slow paths that read or check one thing again (why a guard missed,
    a constant read at export), never for the warm path, which runs compiled functions."""
    return eval(expression, namespace)  # noqa: S307 (a source npdynamo itself generated)


def dispatch_source(name: str, params: str, pairs: int,
                    call: Callable[[int], list[str]], miss: str) -> str:
    """``def name(params)``: for ``i`` in ``range(pairs)``, ``if check{i}(params):`` runs the
    lines ``call(i)`` (which return); when no check holds, ``return miss``. The unrolled form
    of "the first entry whose guards hold runs": one Python call saved per check."""
    lines = [f"def {name}({params}):"]
    for i in range(pairs):
        lines.append(f"    if check{i}({params}):")
        lines += ["        " + line for line in call(i)]
    lines.append(f"    return {miss}")
    return "\n".join(lines) + "\n"
