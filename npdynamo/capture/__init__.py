"""Capture: symbolic evaluation of bytecode into fx graphs, guards and compiled entries.

The composition root of the stage: the frame hook (``frames/``) sits below the translator and
never imports it; here it is given the function that builds an entry on a cache miss, as early
TorchDynamo's ``optimize(convert_frame(backend))`` gave its hook the compiler.
"""

from npdynamo.capture.compile_frame import build_entry
from npdynamo.capture.entry import CompiledEntry
from npdynamo.capture.frames.cache import install_compile_entry

install_compile_entry(build_entry)

__all__ = ["CompiledEntry", "build_entry"]
