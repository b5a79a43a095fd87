"""``capture/guards/sources.py``: each source's report name, short name and the expression it
renders, read back on real frames (arguments ``a0, a1, ...``, globals ``G``, cells ``CELLi``),
and the iterator remainder a guard reads without consuming. The guards built from these sources
are tested end to end in ``test_guards.py``; here each source on its own, then one program whose
guards read attribute, item and global sources again."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from npdynamo.capture.guards.sources import (
    AttrSource,
    ClosureSource,
    GlobalSource,
    ItemSource,
    LocalSource,
    ModuleSource,
    RemainingSource,
    SourceTuple,
    remaining_items,
)
from npdynamo.generated import evaluate
from tests.differential import check_same

SCALE = 3.0


class Model:
    def __init__(self):
        self.layers = [np.arange(3.0), np.ones(3)]
        self.cfg = {"lr": 0.5}


def frame_scope(fn, *args) -> dict:
    """What a generated guard function sees for a call ``fn(*args)``."""
    scope = {f"a{i}": a for i, a in enumerate(args)}
    scope.update({f"CELL{i}": c for i, c in enumerate(fn.__closure__ or ())})
    scope.update(G=fn.__globals__, REMAINING=remaining_items, MODULES=sys.modules)
    return scope


def test_frame_slots_name_short_and_read():
    offset = 2.0

    def fn(model, x):
        return model.layers[1] * x + SCALE + offset

    model, x = Model(), np.arange(3.0)
    scope = frame_scope(fn, model, x)
    local = LocalSource("x", 1)
    glob = GlobalSource("SCALE")
    cell = ClosureSource("offset", 0)
    assert (local.name(), local.short(), str(local)) == ("L['x']", "x", "L['x']")
    assert (glob.name(), glob.short()) == ("G['SCALE']", "SCALE")
    assert (cell.name(), cell.short()) == ("C['offset']", "offset")
    assert evaluate(local.expr(), scope) is x
    assert evaluate(glob.expr(), scope) == SCALE
    assert evaluate(cell.expr(), scope) == offset


def test_suffix_sources_chain_and_read():
    model = Model()
    scope = frame_scope(test_suffix_sources_chain_and_read, model)
    layer = ItemSource(AttrSource(LocalSource("model", 0), "layers"), 1)
    lr = ItemSource(AttrSource(LocalSource("model", 0), "cfg"), "lr")
    assert layer.name() == "L['model'].layers[1]"
    assert layer.short() == "model.layers[1]"
    assert lr.short() == "model.cfg['lr']"
    assert evaluate(layer.expr(), scope) is model.layers[1]
    assert evaluate(lr.expr(), scope) == 0.5
    shape = AttrSource(layer, "shape")
    assert evaluate(shape.expr(), scope) == (3,)
    # a source bound to a local by an earlier check is read from it, and so is what lies under it
    names = {layer: "S0"}
    assert layer.expr(names) == "S0"
    assert shape.expr(names) == "S0.shape"
    # frozen dataclasses: equal sources are one dict key (one guard per fact)
    assert {layer: 1}[ItemSource(AttrSource(LocalSource("model", 0), "layers"), 1)] == 1


def test_tuple_module_and_remaining_sources():
    x, y = np.ones(2), np.zeros(2)
    scope = frame_scope(test_tuple_module_and_remaining_sources, x, y)
    pair = SourceTuple((LocalSource("x", 0), LocalSource("y", 1)))
    assert pair.name() == "(L['x'], L['y'])"
    assert pair.short() == "x, y"
    got = evaluate(pair.expr(), scope)
    assert type(got) is tuple and got[0] is x and got[1] is y
    many = SourceTuple(tuple(LocalSource(f"v{i}", i) for i in range(6)))
    assert many.short() == "v0, v1, v2, ... (6)"
    module = ModuleSource("numpy")
    assert (module.name(), module.short()) == ("sys.modules['numpy']", "numpy")
    assert evaluate(module.expr(), scope) is np
    it = iter([1, 2, 3, 4])
    next(it)
    scope["a0"] = it
    rest = RemainingSource(LocalSource("it", 0))
    assert rest.name() == "remaining(L['it'])"
    assert evaluate(rest.expr(), scope) == (2, 3, 4)
    assert next(it) == 2  # reading the remainder did not advance the iterator


class CountingList(list):
    def __getitem__(self, i):  # user code: a guard must never run it
        raise AssertionError("ran the subclass's __getitem__")


@pytest.mark.parametrize("make", [
    lambda: iter((5, 6, 7)), lambda: iter([5, 6, 7]), lambda: iter(range(5, 8)),
    lambda: iter(CountingList([5, 6, 7])),
])
def test_remaining_items_does_not_consume(make):
    it = make()
    assert remaining_items(it) == (5, 6, 7)
    assert next(it) == 5
    assert remaining_items(it) == (6, 7)
    list(it)
    assert remaining_items(it) == ()


def read_sources(model, x):
    return model.layers[0] * x + model.cfg["lr"] * SCALE


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_guards_read_attribute_item_and_global_sources(backend, monkeypatch):
    model = Model()
    compiled = check_same(read_sources, model, np.arange(3.0), backend=backend,
                          graphs=1, breaks=0)
    model.cfg["lr"] = 0.25  # an item source's guard misses: a second graph
    check_same(read_sources, model, np.arange(3.0), compiled=compiled, graphs=2, breaks=0)
    monkeypatch.setitem(globals(), "SCALE", 4.0)  # the global source's guard misses
    check_same(read_sources, model, np.arange(3.0), compiled=compiled, graphs=3, breaks=0)
