"""``capture/flow/carried_views.py``: which carried locals of a formed ``for`` loop are views of
another carried local's array, and the check that the body keeps each bound to what it views.
Asked directly over stand-in frames of ``ArrayValue``s. End to end (a stencil on a padded grid,
views of views, a rebound view or root keeping the loop unrolled): ``test_view_loops.py``."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo.capture.errors import CaptureUnsupported
from npdynamo.capture.flow.carried_views import root_of, views_kept, views_of_carried
from npdynamo.capture.values import ArrayValue, Const
from npdynamo.fx import Graph
from npdynamo.ops.meta import ArrayMeta

GRAPH = Graph()
SLICE = np.ndarray.__getitem__  # stands for the view op of a recipe; never called here


def _array(name: str) -> ArrayValue:
    return ArrayValue(GRAPH.placeholder(name, ArrayMeta((6,), np.dtype(np.float64))))


def _view(base: ArrayValue, *index) -> ArrayValue:
    view = _array("view")
    view.base, view.recipe = base, (SLICE, (base, *index), {})
    return view


class Frame:
    def __init__(self, **local) -> None:
        self.locals = local

    def unsupported(self, reason, hint="", kind="unsupported_construct"):
        return CaptureUnsupported(reason, hint, kind=kind)


def test_root_of_follows_bases_to_the_array():
    U = _array("U")
    inner = _view(_view(U, slice(1, -1)), slice(None, None, 2))
    assert root_of(inner) is U and root_of(U) is U


def test_a_constant_view_of_a_carried_array_is_remade_not_carried():
    U, other = _array("U"), _array("other")
    u, w = _view(U, slice(1, -1)), _view(_view(U, slice(1, None)), slice(None, None, 2))
    frame = Frame(U=U, u=u, w=w, other=other, n=Const(3))
    views = views_of_carried(frame, ["U", "u", "w", "other", "n"])
    assert views == {"u": ("U", u), "w": ("U", w)}


def test_a_view_of_an_array_not_carried_is_carried_itself():
    U = _array("U")
    frame = Frame(u=_view(U, slice(1, -1)))
    assert views_of_carried(frame, ["u"]) == {}


def test_a_view_made_with_a_graph_value_is_carried_itself():
    U, k = _array("U"), _array("k")
    frame = Frame(U=U, u=_view(U, slice(k, None)), v=_view(U, {"axis": k}))
    assert views_of_carried(frame, ["U", "u", "v"]) == {}


def test_views_kept_refuses_a_body_that_rebinds_the_view_or_its_root():
    U = _array("U")
    u = _view(U, slice(1, -1))
    views = {"u": ("U", u)}
    views_kept(Frame(), {"U": U, "u": u}, views, {"u": u})  # both kept: no error
    for local in ({"U": U, "u": _view(U, slice(2, None))}, {"U": _array("U2"), "u": u}):
        with pytest.raises(CaptureUnsupported, match="rebinds u or U"):
            views_kept(Frame(), local, views, {"u": u})
