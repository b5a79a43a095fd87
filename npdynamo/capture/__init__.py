"""Capture: symbolic evaluation of bytecode into fx graphs, guards and compiled entries.

In parts, from the top (``docs/architecture.md`` walks one call through them):
``compile_frame`` (one frame: a whole graph, else a graph break, else plain Python);
``breaks/`` (graph breaks and resume functions); ``entry`` and ``rebuild`` (the compiled entry);
``opcodes/`` and ``builtin_calls`` (the handlers, registered in ``registry``); ``flow/`` (loops
and branches captured whole, sub-captures); the evaluator (``session``: what one capture builds,
``translator``: the frames that step through bytecode, the value kinds, calls and side effects);
``frames/`` (the frame hook and its cache) and ``guards/``; ``bytecode/`` (the only importer of
the ``bytecode`` library).

The composition root of the stage: the frame hook (``frames/``) sits below the translator and
never imports it; here it is given the function that builds an entry on a cache miss, as early
TorchDynamo's ``optimize(convert_frame(backend))`` gave its hook the compiler.
"""

from npdynamo.capture.compile_frame import build_entry
from npdynamo.capture.entry import CompiledEntry
from npdynamo.capture.frames.cache import install_compile_entry

install_compile_entry(build_entry)

__all__ = ["CompiledEntry", "build_entry"]
