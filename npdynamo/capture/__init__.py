"""Capture: bytecode evaluated on tracked values into fx graphs, guards and compiled entries.

In parts, from the top (``docs/architecture.md`` walks one call through them):
``compile_frame`` (one frame: a whole graph, else a graph break, else plain Python);
``breaks/`` (graph breaks and resume functions); ``entry`` and ``rebuild`` (the compiled entry);
``opcodes/`` and ``builtin_calls`` (the handlers, registered in ``registry``); ``flow/`` (loops
and branches captured whole, sub-captures); the evaluator (``session``: what one capture builds,
``translator``: the frames that step through bytecode, the value kinds, calls and side effects);
``hooks/`` (the frame hook and its cache) and ``guards/``; ``bytecode/`` (the only importer of
the ``bytecode`` library).

The frame hook (``hooks/``) sits below the translator and never imports it: each cache is made
for a session (``compile_frame.new_session``) whose ``build_entry`` it calls on a miss. The
composition root above this package, ``npdynamo/api.py``, makes a session per ``compile()``, as
early TorchDynamo's ``optimize(backend)`` closed over ``convert_frame(backend)``.
"""

from npdynamo.capture.compile_frame import build_entry, new_session
from npdynamo.capture.entry import CompiledEntry

__all__ = ["CompiledEntry", "build_entry", "new_session"]
