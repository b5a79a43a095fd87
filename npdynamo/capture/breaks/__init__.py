"""Graph breaks: where a graph ends before the function does, and how Python carries on.

- ``reasons``: why a graph ends, as typed records with a message and a hint.
- ``broken_frame``: re-trace up to the unsupported instruction and build the broken frame's
  entry (the graph so far, the instruction run natively, the hand-over to a resume function).
- ``native_tail``: the bookkeeping instructions after a break run in the broken frame itself.
- ``resume``: resume functions at run time (``CompileSession``, the trampoline ``finish``).

Above the compiled entry (``entry.py``) it builds; below ``compile_frame``, which falls back to
it when a whole-frame capture stops. The bytecode it generates is built in ``bytecode/``.
"""
