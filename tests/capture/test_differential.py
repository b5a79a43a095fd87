"""Every capture program, plain vs compiled (eager backend): same results, arguments unchanged,
exactly one graph at most and no new capture on the second call."""

import pytest

import npdynamo
from tests.capture import programs_more  # noqa: F401  (registers more programs)
from tests.capture.programs import PROGRAMS
from tests.differential import CountingBackend, check_same

#: programs whose results need no array op (attributes, the inputs themselves, dead products):
#: no graph
NO_OPS = {"attributes", "tuple_returns", "returns_input", "pure_python", "dict_methods"}


@pytest.mark.parametrize("name,fn,factory", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program_matches_python(name, fn, factory):
    backend = CountingBackend()
    compiled = npdynamo.compile(fn, backend=backend, fullgraph=True)
    check_same(fn, *factory(), compiled=compiled, calls=3, graphs=0 if fn.__name__ in NO_OPS else 1,
               breaks=0)
    assert backend.count <= 1, f"{backend.count} graphs for one straight-line function"


def test_enough_distinct_functions():
    import tests.capture.programs_more  # noqa: F401  (registers its programs)

    assert len({id(fn) for _n, fn, _f in PROGRAMS}) >= 80
