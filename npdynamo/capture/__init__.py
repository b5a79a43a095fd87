"""Capture: symbolic evaluation of bytecode into fx graphs, guards and compiled entries."""

from npdynamo.capture.entry import CompiledEntry, build_entry

__all__ = ["CompiledEntry", "build_entry"]
