"""``capture/values.py``: the tracked value kinds on their own. Iterators step as CPython's do
(a list iterator sees appends and stays exhausted, ``reversed``, ``enumerate``, ``zip`` with
``strict=`` raising CPython's own messages, a dict changed while iterated); containers read from
the frame load their items only when used; a guarded constant installs its guard on the first
read only; the kinds are named as the user's Python objects. Then a program using these kinds,
plain against compiled with exact graph/break counts."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.values import (
    NULL,
    ComputedNumberValue,
    Const,
    DictValue,
    GuardedConst,
    IteratorValue,
    ListValue,
    TupleValue,
    UserObjectValue,
    map_values,
)
from tests.differential import check_same


def consts(values) -> list:
    return [Const(v) for v in values]


def drain(it: IteratorValue) -> list:
    return [v.value if isinstance(v, Const) else tuple(x.value for x in v.items)
            for v in it.remaining()]


def test_a_list_iterator_sees_appends_and_stays_exhausted_as_cpythons():
    seq, plain = ListValue(consts([1, 2])), [1, 2]
    it, real = IteratorValue(live=seq, python_type=type(iter([]))), iter(plain)
    assert it.mode == "live"
    assert it.next().value == next(real) == 1
    seq.items.append(Const(3))
    plain.append(3)
    assert drain(it) == list(real) == [2, 3]
    seq.items.append(Const(4))
    plain.append(4)
    assert it.next() is None and list(real) == []  # exhausted for good, as CPython's
    assert it.left() == 0


def test_reversed_enumerate_and_zip_step_as_cpythons():
    seq = ListValue(consts([1, 2, 3]))
    rev = IteratorValue(live=seq, mode="reversed_list", count=2)
    assert drain(rev) == list(reversed([1, 2, 3]))
    inner = IteratorValue(items=consts("ab"))
    numbered = IteratorValue(mode="enumerate", inner=[inner])
    assert numbered.left() == 2
    assert drain(numbered) == list(enumerate("ab"))
    pairs = IteratorValue(mode="zip", inner=[IteratorValue(items=consts([1, 2])),
                                             IteratorValue(items=consts("xyz"))])
    assert pairs.left() == 2 and drain(pairs) == list(zip([1, 2], "xyz"))


@pytest.mark.parametrize("lengths", [(2, 3), (3, 2), (2, 2, 1), (1, 2, 2)])
def test_zip_strict_raises_cpythons_message(lengths):
    seqs = [list(range(n)) for n in lengths]
    with pytest.raises(ValueError) as real:
        list(zip(*seqs, strict=True))
    it = IteratorValue(mode="zip", origin=True,
                       inner=[IteratorValue(items=consts(s)) for s in seqs])
    with pytest.raises(UserCodeRaises) as ours:
        it.remaining()
    assert type(ours.value.error) is ValueError and str(ours.value.error) == str(real.value)


def test_a_dict_changed_while_iterated_raises_cpythons_error():
    d = DictValue({"a": Const(1)})
    it = IteratorValue(items=consts("a"), watch=(d, ["a"], "dictionary"))
    d.items["b"] = Const(2)
    with pytest.raises(UserCodeRaises) as ours:
        it.next()
    real = {"a": 1}
    with pytest.raises(RuntimeError) as theirs:
        for _key in real:
            real["b"] = 2
    assert type(ours.value.error) is RuntimeError
    assert str(ours.value.error) == str(theirs.value)


def test_a_container_from_the_frame_loads_its_items_when_used():
    loaded = []
    seq = ListValue.read_lazily(None, lambda: loaded.append(1) or consts([1, 2]), length=2)
    seq.on_load = lambda: loaded.append("guard")
    assert not seq.loaded and seq.length() == 2 and loaded == ["guard"]  # the count: a fact
    seq.appended.append(Const(3))
    assert seq.length() == 3 and not seq.loaded
    assert [v.value for v in seq.items] == [1, 2, 3] and seq.loaded
    assert repr(TupleValue(consts([1]))) == "TupleValue(1 items)"


def test_a_guarded_constant_installs_its_guard_on_the_first_read_only():
    installs = []
    value = GuardedConst(5, None, lambda: installs.append(1))
    assert value.kind() == "int" and installs == []  # naming the type relies on nothing
    assert value.value == 5 and value.value == 5 and installs == [1]

    def refuse():
        raise RuntimeError("no value at capture time")

    stubborn = GuardedConst(5, None, refuse)
    for _ in range(2):  # a refusing install refuses again on every read
        with pytest.raises(RuntimeError):
            _ = stubborn.value
    computed = ComputedNumberValue(1.0, None, lambda: KeyError("needs the data"))
    with pytest.raises(KeyError):
        _ = computed.value


def test_kinds_are_named_as_the_users_objects_and_map_values_walks_containers():
    assert ListValue([]).kind() == "list" and Const(1.5).kind() == "float"
    assert UserObjectValue(object()).kind() == "object object"
    assert repr(NULL) == "NULL"
    doubled = map_values((1, [2, {"k": 3}], slice(4, None)), lambda v: v * 2 if v else v)
    assert doubled == (2, [4, {"k": 6}], slice(8, None))


def iterates(x, items, d):
    out = x * 0
    for i, (a, b) in enumerate(zip(items, reversed(items), strict=True)):
        out = out + a * b + i
    for k in d:
        out = out + d[k]
    return out


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_iterators_and_containers_match_python(backend):
    check_same(iterates, np.arange(3.0), [1.0, 2.0, 3.0], {"p": 1.0, "q": 2.0},
               backend=backend, graphs=1, breaks=0)
