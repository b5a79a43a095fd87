"""Semantic conformance: hypothesis writes small Python programs over containers, iterators and
user classes with special methods, as source text; each runs plain and compiled and must agree
on results, types, reprs, identity relations, iterator states and exceptions
(``tests.fidelity.check_fidelity``)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.differential import ANY
from tests.fidelity import check_fidelity

PRELUDE = '''
class Num:
    def __init__(self, v):
        self.v = v
    def __eq__(self, other):
        return self.v == (other.v if isinstance(other, Num) else other)
    def __add__(self, other):
        if isinstance(other, Num):
            return self.v + other.v
        return NotImplemented
    def __radd__(self, other):
        return other + self.v
    def __bool__(self):
        return self.v != 0
    def __repr__(self):
        return "Num(%r)" % (self.v,)
    __hash__ = None

class Bag:
    def __init__(self, items):
        self.items = items
    def __len__(self):
        return len(self.items)
    def __iter__(self):
        return iter(self.items)
    def __contains__(self, x):
        return x in self.items
    @property
    def first(self):
        return self.items[0]

class Dyn:
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return len(name)
'''

#: Expressions over the parameters: ``L`` (a list), ``T`` (a tuple), ``D`` (a dict of str
#: keys), ``S`` (a set), ``it`` (a list iterator), ``n`` (a Num), ``b`` (a Bag), ``y`` (a Dyn),
#: ``k`` (an int). Sets are built only from constants: a set of objects hashed by address
#: iterates in an order that differs from run to run, in Python too.
EXPRESSIONS = [
    "L", "T", "D", "S", "it", "n", "b", "k",
    "D.keys()", "D.values()", "D.items()", "list(D)", "D.keys() - S", "D.keys() & S",
    "D.keys() | {'z'}", "len(D.keys())", "'a' in D.keys()", "sorted(L)", "sorted(T)",
    "max(L)", "min(T)", "max(L) is L[0]", "sorted(L)[0] is min(L)", "T * 1", "T + ()",
    "(T * 1) is T", "tuple(T) is T", "L * 2", "T[:]", "list(reversed(L))", "reversed(L)",
    "enumerate(L)", "enumerate(T, 1)", "zip(L, T)", "iter(T)", "iter(range(k))",
    "list(enumerate(L))", "list(zip(L, T))", "next(it)", "next(it, None)", "list(it)",
    "n == 1", "1 == n", "n + n", "1 + n", "[n] == [1]", "(n,) == (1,)", "n != 1",
    "'yes' if n else 'no'", "bool(b)", "len(b)", "b.first", "y.abc", "y.abc + k",
    "int('101', base=2)", "int('7', 8)", "set(T)", "len(set(T))", "{*T, 'q'}",
    "L == list(T)", "list(S) == sorted(S)", "S == set(T)", "k in S", "L.ndim", "T.shape",
    "D['a']", "D.get('q', k)", "k * T", "[x for x in L]", "min(k, 2)", "max(T, default=0)",
]

STATEMENTS = [
    "L.append({e})", "r = {e}", "for q in {e}:\n        r = q", "r = [{e}, {e}]",
    "if {e}:\n        r = 1", "x = {e}\n    r = (x, x)", "L.extend(T)", "D['z'] = {e}",
]


@st.composite
def programs(draw):
    expr = st.sampled_from(EXPRESSIONS)
    lines = ["def f(L, T, D, S, it, n, b, y, k):", "    r = None"]
    for _ in range(draw(st.integers(1, 4))):
        template = draw(st.sampled_from(STATEMENTS))
        lines.append("    " + template.replace("{e}", draw(expr)))
    lines.append(f"    return r, {draw(expr)}")
    return "\n".join(lines) + "\n"


def _arguments(namespace):
    L = [2.5, 0.5, 1.5]
    T = (1.5, 3.5, 0.5)
    return (
        L, T, {"a": 1, "b": 2}, {"a", "x"}, iter([4, 5, 6]), namespace["Num"](1),
        namespace["Bag"]([7, 8]), namespace["Dyn"](), 3,
    )


EXAMPLES = int(os.environ.get("NPDYNAMO_CONFORMANCE_EXAMPLES", "2000"))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(programs())
def test_generated_program_matches_python(source):
    namespace: dict = {}
    exec(compile(PRELUDE + source, "<conformance>", "exec"), namespace)  # noqa: S102
    fn = namespace["f"]
    try:
        check_fidelity(fn, *_arguments(namespace), calls=2, graphs=ANY)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nprogram:\n{source}") from None
