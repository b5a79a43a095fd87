"""Programs for ``test_identity``: sentinel defaults, enum members, class and module attributes,
closure cells and container items compared by identity (issue 30's examples and variants)."""

from __future__ import annotations

import dataclasses
import enum

import numpy as np

_MISSING = object()
OTHER = object()


class Mode(enum.Enum):
    A = 1
    B = 2


class Perm(enum.Flag):
    R = 1
    W = 2


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


B = Mode.B


class Settings:
    SENTINEL = _MISSING
    MODE = Mode.A


CFG = {"d": _MISSING, "scale": 2.0}


# -- the two examples ----------------------------------------------------------------
def shift(x, d=_MISSING):
    return x * 2 if d is _MISSING else x - d


def scale(x, m):
    return x * 11 if m is Mode.B else x


# -- variants --------------------------------------------------------------------------------
def scale_alias(x, m):
    return x * 11 if m is B else x


def scale_not(x, m):
    return x * 3 if m is not Mode.A else x + 1


def scale_in(x, m):
    if m in (Mode.A,):
        return x + 1
    return x * 5 if m not in (Mode.A, Mode.B) else x * 7


def flag(x, p):
    return x * 2 if p is Perm.W else x - 1


def level(x, lv):
    return x * 2 if lv is Level.HIGH else x - 1


def keyword_only(x, *, d=_MISSING):
    return x * 2 if d is _MISSING else x - d


def from_global_dict(x):
    return x * CFG["scale"] if CFG["d"] is _MISSING else x


def from_dict_argument(x, cfg):
    d = cfg.get("d", _MISSING)
    return x * 2 if d is _MISSING else x - d


def dataclass_missing(x, d=dataclasses.MISSING):
    return x * 2 if d is dataclasses.MISSING else x - d


def class_attribute(x, d):
    return x * 2 if d is Settings.SENTINEL else x - 1


def class_mode(x, m):
    return x * 2 if Settings.MODE is m else x - 1


def make_closure():
    marker = object()

    def inner(x, d=None):
        return x * 2 if d is marker else x - 1

    return inner, marker


closure, closure_marker = make_closure()


def same_items(x, t):
    return x * 3 if t[0] is t[1] else x


def two_arguments(x, a, b):
    return x * 3 if a is b else x - 1


def none_default(x, out=None):
    if out is None:
        return x * 2
    return x + out


def member_ids(x, m):
    return x * (1.0 if id(m) == id(Mode.B) else 2.0)


IDS = {id(Mode.A): 3.0, id(Mode.B): 5.0}


def id_keyed(x, m):
    return x * IDS[id(m)]


def members_equal(x, m):
    return x * 2 if m == Mode.B else x


def asarray_is(x):
    return x * 2 if np.asarray(x) is x else x


def code_tuples():
    a = (1, 2)
    b = (1, 2)
    return a is b, a


#: (program, calls: ((args, kwargs), ...)): each call's objects (no copies: identity matters)
CASES = {
    "sentinel default": (shift, [((), {}), ((), {"d": 1.0}), ((), {"d": _MISSING}),
                                 ((), {"d": OTHER})]),
    "enum member": (scale, [((Mode.B,), {}), ((Mode.A,), {}), ((Mode.B,), {})]),
    "enum member by a global alias": (scale_alias, [((Mode.A,), {}), ((Mode.B,), {})]),
    "is not": (scale_not, [((Mode.A,), {}), ((Mode.B,), {}), ((Mode.A,), {})]),
    "in a tuple of members": (scale_in, [((Mode.A,), {}), ((Mode.B,), {}), ((OTHER,), {})]),
    "Flag member": (flag, [((Perm.W,), {}), ((Perm.R,), {}), ((Perm.W,), {})]),
    "IntEnum member": (level, [((Level.HIGH,), {}), ((Level.LOW,), {}), ((2,), {})]),
    "keyword-only sentinel": (keyword_only, [((), {}), ((), {"d": 0.5}), ((), {})]),
    "sentinel in a global dict": (from_global_dict, [((), {})]),
    "sentinel in a dict argument": (from_dict_argument, [
        (({"d": _MISSING},), {}), (({"d": 0.5},), {}), (({},), {}), (({"d": OTHER},), {})]),
    "dataclasses.MISSING": (dataclass_missing, [((), {}), ((), {"d": 1.5}), ((), {})]),
    "class attribute": (class_attribute, [((_MISSING,), {}), ((OTHER,), {}),
                                          ((_MISSING,), {})]),
    "class attribute holding a member": (class_mode, [((Mode.A,), {}), ((Mode.B,), {})]),
    "closure cell": (closure, [((), {}), ((), {"d": closure_marker}), ((), {"d": OTHER})]),
    "items of a tuple passed in": (same_items, [(((OTHER, OTHER),), {}),
                                                (((OTHER, _MISSING),), {}),
                                                (((Mode.A, Mode.A),), {})]),
    "two arguments": (two_arguments, [((OTHER, OTHER), {}), ((OTHER, Mode.A), {}),
                                      ((Mode.A, Mode.A), {})]),
    "None default": (none_default, [((), {}), ((), {"out": 1.0}), ((), {})]),
    "id()": (member_ids, [((Mode.B,), {}), ((Mode.A,), {}), ((Mode.B,), {})]),
    "id-keyed dict": (id_keyed, [((Mode.B,), {}), ((Mode.A,), {})]),
    "==": (members_equal, [((Mode.B,), {}), ((Mode.A,), {})]),
}


def _helper(x, d=_MISSING):
    return x * 2 if d is _MISSING else x - d


def inlined_default(x, d=None):
    return _helper(x) + (_helper(x, d) if d is not None else 0.0)


class Model:
    def step(self, x, d=_MISSING):
        return x * 2 if d is _MISSING else x - d


MODEL = Model()


def method_default(x, d=None):
    return MODEL.step(x) if d is None else MODEL.step(x, d)


def numpy_novalue(x, axis=np._NoValue):
    return x * 2 if axis is np._NoValue else x.sum(axis=axis)


CASES.update({
    "default of an inlined function": (inlined_default, [((), {}), ((), {"d": 0.5}),
                                                         ((), {"d": _MISSING})]),
    "default of a method": (method_default, [((), {}), ((), {"d": 0.5}), ((), {"d": _MISSING})]),
    "np._NoValue": (numpy_novalue, [((), {}), ((), {"axis": 0}), ((), {})]),
})
