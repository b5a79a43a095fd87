"""A method, static or class method, property or special method that the capture found on an
object's class and inlined is guarded to stay what it was: replaced on the class, shadowed by a
subclass or the instance, given later (a special method that was missing; a data descriptor or
``__setattr__`` where the function stores an attribute), or its function's
``__code__``/``__defaults__`` assigned in place (as a reloader such as IPython's autoreload does)
is a guard miss and a new capture, never the old body run again
(``capture/absent_attributes.class_lookup``, ``calls.class_member``). Plain vs compiled on
copies of the same object, before and after each change, with the graphs made."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from tests.differential import assert_compiled, assert_same_value, check_same, run_both

X = np.arange(3.0)


def _classes():
    class Base:
        def m(self, x):
            return x + 1

        @staticmethod
        def s(x, k=2):
            return x * k

        @classmethod
        def c(cls, x):
            return x - 3

        @property
        def p(self):
            return 4.0

        def __len__(self):
            return 3

        def __call__(self, x):
            return x + 5

    class Sub(Base):
        pass

    return Base, Sub


def call_method(o, x):
    return o.m(x)


def read_then_call(o, x):
    m = o.m  # LOAD_ATTR, not the method form: a bound method
    return m(x)


def call_static(o, x):
    return o.s(x)


def call_class(o, x):
    return o.c(x)


def read_property(o, x):
    return x * o.p


def length(o, x):
    return x * len(o)


def call_object(o, x):
    return o(x)


def truth(o, x):
    return x + 1 if o else x - 1


def reflected(o, x):
    return x * (3 + o)


def store_then_read(o, x):
    o.k = 2.0
    return x * o.k


def _setattr_27(self, name, value):
    object.__setattr__(self, name, 27.0)


def _code(fn):
    return fn.__code__


#: (name, the function, the change made to the object's class (or the object) between calls,
#: [the graphs and breaks made])
CHANGES = [
    ("method code", call_method,
     lambda o, B, S: setattr(B.m, "__code__", _code(lambda self, x: x * 10))),
    ("method replaced", call_method, lambda o, B, S: setattr(B, "m", lambda self, x: x * 11)),
    ("method shadowed by the subclass", call_method,
     lambda o, B, S: setattr(S, "m", lambda self, x: x * 12)),
    ("method shadowed by the instance", call_method,
     lambda o, B, S: setattr(o, "m", lambda x: x * 13)),
    ("bound method code", read_then_call,
     lambda o, B, S: setattr(B.m, "__code__", _code(lambda self, x: x * 14))),
    ("static code", call_static,
     lambda o, B, S: setattr(B.__dict__["s"].__func__, "__code__", _code(lambda x, k=2: x - k))),
    ("static defaults", call_static,
     lambda o, B, S: setattr(B.__dict__["s"].__func__, "__defaults__", (7,))),
    ("static replaced", call_static,
     lambda o, B, S: setattr(B, "s", staticmethod(lambda x, k=2: x * 15))),
    # (then ``o.s(x)`` binds ``o`` as ``x``: ``o * 2`` on the user object is a graph break)
    ("static made a plain function", call_static,
     lambda o, B, S: setattr(S, "s", B.__dict__["s"].__func__), (2, 1)),
    ("static shadowed by the instance", call_static,
     lambda o, B, S: setattr(o, "s", lambda x: x * 16)),
    ("class method code", call_class,
     lambda o, B, S: setattr(B.__dict__["c"].__func__, "__code__", _code(lambda cls, x: x * 17))),
    ("class method replaced", call_class,
     lambda o, B, S: setattr(B, "c", classmethod(lambda cls, x: x * 18))),
    ("property getter code", read_property,
     lambda o, B, S: setattr(B.__dict__["p"].fget, "__code__", _code(lambda self: 19.0))),
    ("property replaced", read_property,
     lambda o, B, S: setattr(B, "p", property(lambda self: 20.0))),
    ("__len__ code", length,
     lambda o, B, S: setattr(B.__len__, "__code__", _code(lambda self: 21))),
    ("__len__ in the subclass", length, lambda o, B, S: setattr(S, "__len__", lambda self: 22)),
    ("__call__ code", call_object,
     lambda o, B, S: setattr(B.__call__, "__code__", _code(lambda self, x: x * 23))),
    ("__call__ replaced", call_object,
     lambda o, B, S: setattr(B, "__call__", lambda self, x: x * 24)),
    ("__bool__ given", truth, lambda o, B, S: setattr(S, "__bool__", lambda self: False)),
    ("__len__ made 0", truth, lambda o, B, S: setattr(B, "__len__", lambda self: 0)),
    ("__radd__ given", reflected, lambda o, B, S: setattr(S, "__radd__", lambda self, k: k * 25)),
    # a store is replayed with setattr, which would run them (the new capture breaks there)
    ("data descriptor given for a stored name", store_then_read,
     lambda o, B, S: setattr(S, "k", property(lambda self: 26.0, lambda self, v: None)), (2, 1)),
    ("__setattr__ given", store_then_read,
     lambda o, B, S: setattr(B, "__setattr__", _setattr_27), (2, 1)),
]


def _named_classes():
    """The classes of ``_classes`` made again with a qualified name outside any function: the
    guards hold such a class as it is and read its ``__dict__`` bound once
    (``GuardSet._classes``), where a class made in a function is read through ``type(obj)``."""
    local, _ = _classes()
    members = {k: v for k, v in vars(local).items() if k not in ("__dict__", "__weakref__")}
    base = type("Base", (), members)
    return base, type("Sub", (base,), {})


@pytest.mark.parametrize("classes", [_classes, _named_classes], ids=["local", "named"])
@pytest.mark.parametrize("fn,change,made", [(c[1], c[2], c[3] if len(c) > 3 else (2, 0))
                                             for c in CHANGES], ids=[c[0] for c in CHANGES])
def test_a_class_member_changed_between_calls_is_not_run_stale(fn, change, made, classes):
    base, sub = classes()
    obj = sub()
    compiled = npdynamo.compile(fn)
    raised = False
    for turn in range(3):
        if turn == 1:
            change(obj, base, sub)
        run = run_both(fn, compiled, (obj, X), {})
        raised |= run.exc is not None
        if run.exc is None:
            assert_same_value(run.expected, run.got)
    # one graph before the change, one after it (the third call is served by it); a call
    # that raises reruns in Python (no entry)
    assert_compiled(compiled, graphs=made[0] - raised, breaks=made[1], raised=raised)


def _optional_x(self, x=None):
    return -1.0 if x is None else x + 1


def test_a_method_made_a_static_method_of_itself_is_a_guard_miss():
    # ``B.m`` reads the same function either way: the guard reads the class's ``__dict__``
    for make in (lambda: type("B", (), {"m": _optional_x}),  # (held as it is)
                 lambda: _classes()[0]):
        klass = make()
        klass.m = _optional_x
        obj = klass()
        compiled = npdynamo.compile(call_method)
        before = len(npdynamo.inspect(compiled).entries)  # (entries live with the code)
        for turn in range(3):
            if turn == 1:  # now ``o.m(x)`` is ``_optional_x(x)``: -1.0
                klass.m = staticmethod(_optional_x)
            run = run_both(call_method, compiled, (obj, X), {})
            assert_same_value(run.expected, run.got)
        # (the second capture returns a constant: an entry with no graph)
        assert len(npdynamo.inspect(compiled).entries) == before + 2


class Layer:
    def __init__(self, k: float) -> None:
        self.k = k

    def __call__(self, x):
        return x * self.k


class Shifted(Layer):
    def __call__(self, x):
        return x + self.k


def run_layers(layers, x):
    for layer in layers:
        x = layer(x)
    return x


def _layer_guards(compiled) -> list[str]:
    (entry,) = npdynamo.inspect(compiled).entries
    return [g for g in entry.guards if "__call__" in g]


def test_objects_of_one_class_share_the_guards_of_its_members():
    # three layers of one class: one lookup of ``__call__`` (and its code), and each layer's
    # own type guard, so a layer given another class is a guard miss
    layers = [Layer(2.0), Layer(3.0), Layer(4.0)]
    compiled = npdynamo.compile(run_layers)
    check_same(run_layers, layers, X, compiled=compiled, calls=2, graphs=1, breaks=0)
    assert len(_layer_guards(compiled)) == 2, _layer_guards(compiled)
    layers[2].__class__ = Shifted
    check_same(run_layers, layers, X, compiled=compiled, calls=2, graphs=2, breaks=0)


@pytest.mark.parametrize("change", [
    lambda: setattr(Layer, "__call__", Other.__call__),
    lambda: setattr(Layer.__call__, "__code__", Other.__call__.__code__),
    lambda: setattr(Shifted, "__bases__", (Other,)),
], ids=["replaced", "code", "bases"])
def test_a_member_of_a_class_changed_is_a_miss_for_all_its_objects(change):
    saved = Layer.__call__, Layer.__call__.__code__, Shifted.__call__, Shifted.__bases__
    del Shifted.__call__  # (its objects find Layer's, in the MRO's second class)
    layers = [Shifted(2.0), Shifted(3.0)]
    compiled = npdynamo.compile(run_layers)
    try:
        check_same(run_layers, layers, X, compiled=compiled, calls=2, graphs=1, breaks=0)
        change()
        check_same(run_layers, layers, X, compiled=compiled, calls=2, graphs=2, breaks=0)
    finally:
        Layer.__call__, Shifted.__call__, Shifted.__bases__ = saved[0], saved[2], saved[3]
        Layer.__call__.__code__ = saved[1]


class Other:
    def __init__(self, k: float) -> None:
        self.k = k

    def __call__(self, x):
        return x - self.k
