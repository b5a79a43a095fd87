"""``capture/descriptors.py``: which class attributes' ``__get__`` capture may run itself. Each
kind of class attribute is asked directly; then a descriptor whose ``__get__`` has an effect
breaks the graph and runs natively once per call, while a property is inlined."""

from __future__ import annotations

import collections
import enum
import functools
import types

import numpy as np
import pytest

from npdynamo.capture.descriptors import user_descriptor
from tests.differential import check_same


class Counting:
    """A descriptor whose ``__get__`` counts its reads on the instance."""

    def __get__(self, obj, owner=None):
        if obj is not None:
            obj.reads += 1
        return 3.0


class Holder:
    scale = Counting()

    def __init__(self) -> None:
        self.reads = 0

    @property
    def twice(self) -> float:
        return 2.0


class Color(enum.Enum):
    RED = 2


def _method(self):
    return self


Pair = collections.namedtuple("Pair", "a b")


@pytest.mark.parametrize("attr", [
    None, 1.5, "text", _method, staticmethod(_method), classmethod(_method),
    property(_method), types.DynamicClassAttribute(_method), vars(enum.Enum)["value"],
    vars(Pair)["a"], functools.lru_cache(_method),
    vars(object)["__class__"], vars(type)["__name__"],  # builtins C getsets
    vars(list)["append"], vars(int)["__add__"],  # C method/wrapper descriptors
], ids=lambda a: type(a).__name__)
def test_attributes_capture_may_read(attr):
    assert not user_descriptor(attr)


@pytest.mark.parametrize("attr", [
    Counting(), functools.partialmethod(_method), functools.cached_property(_method),
], ids=lambda a: type(a).__name__)
def test_attributes_read_natively(attr):
    assert user_descriptor(attr)


def test_a_partial_is_read_natively_where_it_is_a_descriptor():
    # 3.13 gave ``partial`` a ``__get__`` that warns (at the reading line); before, it had none
    # and is a plain class attribute
    assert user_descriptor(functools.partial(_method)) is hasattr(functools.partial, "__get__")


def read_counting(x, holder):
    return x * holder.scale


def read_property(x, holder):
    return x * holder.twice + Color.RED.value


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_user_descriptor_breaks_and_runs_once_a_call(backend):
    # ``reads`` after each call is compared with the plain call's: 1 per call, never 0
    check_same(read_counting, np.arange(3.0), Holder(), backend=backend, graphs=1, breaks=1)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_property_and_an_enum_value_are_read_in_the_graph(backend):
    check_same(read_property, np.arange(3.0), Holder(), backend=backend, graphs=1, breaks=0)
