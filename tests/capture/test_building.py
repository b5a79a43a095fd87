"""``capture/opcodes/building.py``: the handlers that build tuples, lists, sets, dicts and
strings and unpack sequences. Each runs in a small program, plain against compiled with exact
graph/break counts (raising cases raise the same exception), and the programs together reach
every handler the module registers on the running Python. Containers' own semantics are tested
in ``test_identity.py`` and the CPython conformance tests."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo.capture.opcodes import building
from tests.capture.opcode_coverage import handled_by, opnames
from tests.differential import check_same


def containers(x, n):
    t = (x, n)  # BUILD_TUPLE
    items = [x, x * 2, *t]  # BUILD_LIST, LIST_EXTEND
    tags = {n, 1, *range(2)}  # BUILD_SET, SET_UPDATE
    d = {"a": x, "b": n}  # BUILD_CONST_KEY_MAP
    e = {n: x}  # BUILD_MAP
    f = {**d, "c": 3}  # DICT_UPDATE
    sq = [v + 1 for v in items]  # LIST_APPEND
    ks = {k for k in d}  # SET_ADD
    dd = {k: v * 2 for k, v in d.items()}  # MAP_ADD
    return (*items,), sq, sorted(tags), e, f, sorted(ks), dd  # LIST_TO_TUPLE (3.11)


def keywords(x, extra):
    return np.sum(x, **extra)  # DICT_MERGE


def unpacking(x, pair):
    a, b = pair  # UNPACK_SEQUENCE
    first, *rest = x.shape + (4, 5)  # UNPACK_EX
    return a * x + b, first, rest


def strings(x, n):
    name = f"n={n!r} {n:>4} {n}"  # FORMAT_VALUE (3.11/3.12); 3.13 CONVERT_VALUE, FORMAT_*
    return x * len(name), name


def formats_an_array(x):
    return f"{x.sum()}"  # a graph value needs its data in Python: a break


def too_few(pair):
    a, b, c = pair
    return a


def too_few_starred(pair):
    a, b, *c, d = pair
    return a


def duplicate_keyword(x, extra):
    return np.sum(x, axis=0, **extra)


PROGRAMS = [containers, keywords, unpacking, strings, formats_an_array, too_few,
            too_few_starred, duplicate_keyword]


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_built_containers_and_strings_match_python(backend):
    x = np.arange(3.0)
    check_same(containers, x, 2, backend=backend, graphs=1, breaks=0)
    check_same(keywords, x.reshape(1, 3), {"axis": 1}, backend=backend, graphs=1, breaks=0)
    check_same(unpacking, x, (2.0, x), backend=backend, graphs=1, breaks=0)
    check_same(strings, x, 7, backend=backend, graphs=1, breaks=0)


def test_formatting_a_graph_value_is_a_break():
    check_same(formats_an_array, np.arange(3.0), graphs=1, breaks=1)


@pytest.mark.parametrize("fn, args", [
    (too_few, ((1, 2),)), (too_few, ([1, 2, 3, 4],)), (too_few_starred, ((1, 2),)),
    (duplicate_keyword, (np.ones((2, 2)), {"axis": 1})),
])
def test_a_wrong_count_raises_as_python(fn, args):
    check_same(fn, *args, graphs=0, breaks=0)


def test_the_programs_reach_every_handler_of_the_module():
    # LIST_TO_TUPLE is 3.11's (then CALL_INTRINSIC_1, in operators)
    assert handled_by(building) <= opnames(*PROGRAMS)
