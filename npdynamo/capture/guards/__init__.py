"""Guards: what a compiled entry assumes about its inputs, checked on every call."""

from npdynamo.capture.guards.guard import Guard, GuardSet
from npdynamo.capture.guards.kinds import GuardKind, NonEmptyRange, Owners, SameFunction
from npdynamo.capture.guards.sources import (
    AttrSource,
    ClassSource,
    ClosureCellSource,
    ClosureSource,
    GlobalSource,
    ItemSource,
    LocalSource,
    ModuleSource,
    RemainingSource,
    Source,
    SourceTuple,
    remaining_items,
)

__all__ = [
    "AttrSource",
    "ClassSource",
    "ClosureCellSource",
    "ClosureSource",
    "GlobalSource",
    "Guard",
    "GuardKind",
    "NonEmptyRange",
    "Owners",
    "SameFunction",
    "GuardSet",
    "ItemSource",
    "LocalSource",
    "ModuleSource",
    "RemainingSource",
    "SourceTuple",
    "Source",
    "remaining_items",
]
