"""The public NumPy names the ops stage captures, and the documentation table made from them.

``supported_functions()`` lists every ``np.<name>``, ``np.linalg.<name>`` and ``ndarray.<name>``
whose calls normalise to a canonical op (aliases such as ``np.abs``/``np.absolute`` are two public
names of one op). ``python -m npdynamo.ops [docs/capture.md]`` (``make readme-table``) rewrites
the table between the markers of the user guide's capture page; a test checks it is up to date.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from npdynamo.ops import normalize  # noqa: F401 - fills the binder tables
from npdynamo.ops.binding import FUNCTIONS, METHODS

BEGIN = "<!-- supported-functions:begin (python -m npdynamo.ops) -->"
END = "<!-- supported-functions:end -->"
_MODULES = (("np.", np), ("np.linalg.", np.linalg))


def supported_functions() -> list[str]:
    """The sorted public names (``np.cumsum``, ``np.linalg.norm``, ``ndarray.sum``...) captured."""
    names = set()
    for prefix, module in _MODULES:
        for name, value in vars(module).items():
            if name.startswith("_"):
                continue
            try:
                if value in FUNCTIONS:
                    names.add(prefix + name)
            except TypeError:  # unhashable module attributes
                continue
    names.update(f"ndarray.{m}" for m in METHODS
                 if not m.startswith("__") and hasattr(np.ndarray, m))
    return sorted(names)


def table(columns: int = 6) -> str:
    """The names as a Markdown table, ``columns`` per row."""
    names = [f"`{n}`" for n in supported_functions()]
    rows = [names[i:i + columns] for i in range(0, len(names), columns)]
    lines = [f"{len(names)} public names are captured into graphs:", "",
             "|" + " |" * columns, "|" + "---|" * columns]
    lines += ["| " + " | ".join(r + [""] * (columns - len(r))) + " |" for r in rows]
    return "\n".join(lines)


def updated(text: str) -> str:
    """``text`` (``docs/capture.md``) with the table between the markers regenerated."""
    head, sep, rest = text.partition(BEGIN)
    if not sep or END not in rest:
        raise ValueError(f"the page has no {BEGIN} ... {END} markers")
    tail = rest.partition(END)[2]
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else "docs/capture.md")
    path.write_text(updated(path.read_text()))
    return 0

