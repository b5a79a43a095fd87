"""The opcode-handler table: one handler per CPython instruction the translator understands.

Handlers are registered with the Python versions they apply to (``@handler("NAME", since=...,
until=...)``) into the one ``HANDLERS`` table, from the modules of this package grouped by what
the instructions do. Where an opcode's stack layout differs by version, the difference sits in
the handler or in the layout helpers (``layout.py``: NULL beside a global, method pairs, calls with
keyword names), so the rest of the translator sees one canonical call. An opcode with no handler
for the running version is an unsupported construct (a graph break), never a crash."""

from __future__ import annotations

from npdynamo.capture.code import PY

HANDLERS: dict = {}


def handler(*names: str, since=(3, 11), until=(3, 13)):
    """Register a handler for ``names`` if the running Python is in [since, until]."""

    def register(fn):
        if since <= PY <= until:
            for name in names:
                HANDLERS[name] = fn
        return fn

    return register
