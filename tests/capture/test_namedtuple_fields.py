"""Fields of namedtuples from outside, plain vs compiled: ``p.x`` is ``p[i]`` while the class's
``x`` is the field's descriptor and the class keeps tuple's own lookup; a subclass that adds a
method or a ``__dict__`` still reads fields that way; one that overrides the field, the lookup
or item access is read by Python (a graph break), and a class changed between calls is a
guard miss."""

import collections
import typing

import numpy as np
import pytest

import npdynamo
from tests.capture.test_dynamic_shapes import NumbaCounting
from tests.differential import CountingBackend, assert_compiled, assert_same_value, check_same

Point = collections.namedtuple("Point", "x y")


class Typed(typing.NamedTuple):
    w: np.ndarray
    b: np.ndarray
    scale: float = 2.0


class WithMethod(Point):
    __slots__ = ()

    def norm(self):
        return np.sqrt(self.x**2 + self.y**2)


class WithDict(Point):  # no __slots__: instances have a __dict__
    pass


class OverriddenField(Point):
    __slots__ = ()

    @property
    def x(self):
        return self[1] * 10.0


class OverriddenLookup(Point):
    __slots__ = ()

    def __getattribute__(self, name):
        if name == "x":
            return np.zeros(3)
        return super().__getattribute__(name)


class OverriddenItem(Point):
    __slots__ = ()

    def __getitem__(self, i):
        return np.ones(3)


class WithGetattr(Point):
    __slots__ = ()

    def __getattr__(self, name):
        return np.full(3, 7.0)


@pytest.fixture(autouse=True)
def _fresh():
    npdynamo.reset()
    yield
    npdynamo.reset()


def add_fields(p):
    return p.x + p.y * 2.0


def linear(m, x):
    return x @ m.w + m.b * m.scale


def norm(p):
    return p.norm() + p.x


def _point(cls=Point):
    return cls(np.arange(3.0), np.linspace(0.0, 1.0, 3))


def _typed(scale=2.0):
    return Typed(np.ones((3, 2)), np.arange(2.0), scale)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_fields_are_items(backend):
    check_same(add_fields, _point(), backend=backend, calls=3, graphs=1, breaks=0)
    check_same(linear, _typed(), np.arange(3.0), backend=backend, calls=3, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_one_capture_serves_many_calls(backend):
    counting = CountingBackend() if backend == "eager" else NumbaCounting()
    compiled = npdynamo.compile(linear, backend=counting)
    for i in range(20):
        m = Typed(np.full((3, 2), float(i)), np.arange(2.0) - i, 2.0)
        check_same(linear, m, np.arange(3.0), compiled=compiled, calls=1, graphs=1, breaks=0)
    assert counting.count == 1


def test_a_changed_field_value_is_read_again():
    compiled = npdynamo.compile(linear, backend=CountingBackend())
    # the float field: a miss, then a dynamic scalar (running totals of graphs made)
    for scale, graphs in zip((2.0, 2.0, 3.0, 4.0), (1, 1, 2, 2)):
        check_same(linear, _typed(scale), np.arange(3.0), compiled=compiled, calls=1,
                   graphs=graphs, breaks=0)


@pytest.mark.parametrize("cls", [WithMethod, WithDict])
def test_subclasses_that_keep_the_fields(cls):
    p = _point(cls)
    if cls is WithDict:
        # the field is a data descriptor: not shadowed (and the object cannot be deep-copied)
        p.__dict__["x"] = np.full(3, 99.0)
        _same_without_copies(add_fields, p, graphs=1, breaks=0)
    else:
        check_same(norm, p, calls=2, graphs=1, breaks=0)


def _same_without_copies(fn, p, **counts):
    """``check_same`` for an argument that neither run changes and ``deepcopy`` cannot copy."""
    compiled = npdynamo.compile(fn)
    for _ in range(2):
        try:
            expected, plain_error = fn(p), None
        except Exception as exc:  # noqa: BLE001 - compared below
            expected, plain_error = None, exc
        try:
            got, error = compiled(p), None
        except Exception as exc:  # noqa: BLE001 - compared below
            got, error = None, exc
        assert type(error) is type(plain_error) and str(error) == str(plain_error)
        assert_same_value(expected, got)
    assert_compiled(compiled, raised=plain_error is not None, **counts)


@pytest.mark.parametrize(
    "cls, breaks",
    # the property is inlined up to its p[1]; the others break at both reads
    [(OverriddenField, 1), (OverriddenLookup, 2), (OverriddenItem, 2), (WithGetattr, 2)],
)
def test_subclasses_that_change_the_lookup_break(cls, breaks):
    # (WithGetattr's would answer deepcopy's question for __deepcopy__)
    _same_without_copies(add_fields, _point(cls), graphs=1, breaks=breaks)


def test_a_different_class_is_a_guard_miss():
    compiled = npdynamo.compile(add_fields, backend=CountingBackend())
    for cls, graphs, breaks in ((Point, 1, 0), (Point, 1, 0), (OverriddenField, 2, 1),
                                (WithMethod, 3, 1), (Point, 3, 1),
                                (OverriddenLookup, 4, 3)):  # (running totals)
        check_same(add_fields, _point(cls), compiled=compiled, calls=1, graphs=graphs,
                   breaks=breaks)


def test_a_class_changed_in_place_is_a_guard_miss():
    Local = collections.namedtuple("Local", "x y")
    compiled = npdynamo.compile(add_fields, backend=CountingBackend())
    check_same(add_fields, _point(Local), compiled=compiled, calls=2, graphs=1, breaks=0)
    getter = Local.x
    try:
        Local.x = property(lambda self: self[1] - 5.0)
        check_same(add_fields, _point(Local), compiled=compiled, calls=2, graphs=2, breaks=1)
    finally:
        Local.x = getter
    check_same(add_fields, _point(Local), compiled=compiled, calls=1, graphs=2, breaks=1)


def short_tuple(p):
    return p.y


def test_a_tuple_too_short_for_the_field_raises_as_in_python():
    short = tuple.__new__(Point, (np.arange(3.0),))
    _same_without_copies(short_tuple, short, graphs=0, breaks=1)
    _same_without_copies(add_fields, short, graphs=0, breaks=1)
