"""``npdynamo/generated.py``: names for generated sources, and running them."""

from __future__ import annotations

import linecache

from npdynamo.generated import Names, Namespace, define, unique_name


class CountingNames(Names):
    """Counts the membership tests ``unique_name`` makes."""

    def __init__(self, names=()) -> None:
        super().__init__(names)
        self.lookups = 0

    def __contains__(self, name: object) -> bool:
        self.lookups += 1
        return super().__contains__(name)


def test_unique_name_numbers_a_base_in_order_and_skips_taken_names():
    taken = Names({"x_2"})
    assert [unique_name("x", taken) for _ in range(4)] == ["x", "x_1", "x_3", "x_4"]
    assert unique_name("y", taken) == "y"
    taken.add("x_5")  # taken from outside after the counter moved on: still skipped
    assert unique_name("x", taken) == "x_6"


def test_unique_name_asked_for_one_base_many_times_is_linear():
    taken = CountingNames()
    names = [unique_name("const", taken) for _ in range(2000)]
    assert len(set(names)) == 2000
    # one look-up per name given (a scan from ``const`` each time made 2 million)
    assert taken.lookups == 2000


def test_namespace_binds_the_same_object_to_the_same_name_and_avoids_reserved_names():
    ns = Namespace(reserved=["_K"])
    obj = object()
    name = ns.bind(obj)
    assert name != "_K" and ns.bind(obj) == name and ns.values[name] is obj
    assert ns.fresh("K") not in {name, "_K"}


def test_define_registers_the_source_for_tracebacks():
    source = "def f(a):\n    return a + 1\n"
    f = define(source, "f", {}, label="test")
    assert f(1) == 2
    assert linecache.getline(f.__code__.co_filename, 2).strip() == "return a + 1"
