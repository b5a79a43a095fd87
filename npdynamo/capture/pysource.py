"""Generated Python functions: the guard checks and entry runners are source text compiled once.

Generated functions beat interpreted closures by about 2.7x (capture-pitfalls.md, Q4), so every
per-call path of a compiled entry is generated source. ``Namespace`` binds the objects that source
refers to (dtypes, types, constants, closure cells) under stable names.
"""

from __future__ import annotations

import itertools
import linecache
from collections.abc import Callable

_counter = itertools.count()


class Namespace:
    """Names for the objects a generated function refers to; becomes its globals."""

    def __init__(self, base: dict | None = None) -> None:
        self.values: dict[str, object] = dict(base or {})
        self._by_id: dict[int, str] = {}

    def bind(self, obj: object, hint: str = "K") -> str:
        """A global name that holds ``obj`` (the same name for the same object)."""
        key = id(obj)
        if key in self._by_id:
            return self._by_id[key]
        name = f"{hint}{len(self.values)}"
        self.values[name] = obj
        self._by_id[key] = name
        return name


def literal(value: object) -> str | None:
    """Source text for ``value`` when its repr is a faithful literal, else None."""
    if type(value) is int and value.bit_length() > 4_000:
        return None  # its repr may pass sys.get_int_max_str_digits() (a ValueError)
    if value is None or value is Ellipsis or type(value) in (bool, int, str):
        return repr(value)
    if type(value) is float:
        return repr(value) if value == value and abs(value) != float("inf") else None
    if type(value) is tuple:
        parts = [literal(v) for v in value]
        if any(p is None for p in parts):
            return None
        return "(" + "".join(p + ", " for p in parts) + ")"
    return None


def make_function(source: str, fn_name: str, namespace: Namespace, label: str) -> Callable:
    """Compile ``source`` (defining ``fn_name``) once; register it with linecache for tracebacks."""
    filename = f"<npdynamo-{label}-{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = compile(source, filename, "exec")
    scope = dict(namespace.values)
    exec(code, scope)
    fn = scope[fn_name]
    fn.__npdynamo_source__ = source
    return fn
