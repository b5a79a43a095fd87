"""No guard on objects that are new on every call: bound methods of C and Cython objects.

Every attribute read makes a new bound method, so guarding its identity recompiled on every
call. These tests run each function plain and compiled on copies of the same inputs, many
times, and assert both the results and how often it was captured.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import npdynamo
from npdynamo.api import reset
from npdynamo.capture.hooks import RecompileLimitWarning, compiled_entries
from tests.differential import CountingBackend, assert_compiled, assert_same_value, check_same


@pytest.fixture(autouse=True)
def clean():
    reset()
    yield
    reset()


def check_with_generator(fn, seed, *args, compiled):
    """``check_same`` for a function whose first argument is a Generator (its state compared)."""
    rng_plain, rng_comp = np.random.default_rng(seed), np.random.default_rng(seed)
    expected = fn(rng_plain, *copy.deepcopy(args))
    assert_same_value(expected, compiled(rng_comp, *copy.deepcopy(args)))
    assert rng_plain.bit_generator.state == rng_comp.bit_generator.state


def check_stable(fn, make_args, calls=10, max_entries=1, *, graphs: int, breaks: int):
    """Differential over ``calls`` calls with fresh inputs; no recompile after the 2nd call;
    ``graphs`` graphs and ``breaks`` breaks from the first call on."""
    backend = CountingBackend()
    compiled = npdynamo.compile(fn, backend=backend)
    counts = []
    with warnings.catch_warnings():
        # the frame's limit and the limit of the resume functions after its breaks
        warnings.simplefilter("error", RecompileLimitWarning)
        warnings.filterwarnings("error", message="npdynamo: the code after a graph break")
        for i in range(calls):
            args = make_args(i)
            if isinstance(args[0], np.random.Generator):
                check_with_generator(fn, i, *args[1:], compiled=compiled)
                assert_compiled(compiled, graphs, breaks)
            else:
                check_same(fn, *args, calls=1, compiled=compiled, graphs=graphs, breaks=breaks)
            counts.append(backend.count)
    assert len(compiled_entries(compiled)) <= max_entries
    assert counts[1] == counts[-1], f"graphs compiled per call: {counts}"
    return compiled, backend


def draws_once(rng, x):
    return x + rng.standard_normal(4)


def draws_integers(rng, x):
    return x * rng.integers(0, 10, size=4)


def draws_twenty_times(rng, x):
    for _ in range(20):
        x = x + rng.standard_normal(4)
    return x


def test_generator_method_is_guarded_by_its_function_not_its_identity():
    check_stable(draws_once, lambda i: (np.random.default_rng(i), np.ones(4)), graphs=1, breaks=0)
    check_stable(draws_integers, lambda i: (np.random.default_rng(i), np.ones(4)), graphs=1,
                 breaks=0)


def test_generator_used_twenty_times_is_captured_once():
    compiled, backend = check_stable(
        draws_twenty_times, lambda i: (np.random.default_rng(i), np.arange(4.0)), calls=6,
        graphs=1, breaks=0,
    )
    assert len(compiled_entries(compiled)) == 1


def test_the_same_generator_object_keeps_its_state():
    rng_plain, rng_comp = np.random.default_rng(7), np.random.default_rng(7)
    compiled = npdynamo.compile(draws_once)
    for _ in range(5):
        np.testing.assert_array_equal(
            draws_once(rng_plain, np.ones(4)), compiled(rng_comp, np.ones(4))
        )
    assert len(compiled_entries(compiled)) == 1


def formats_at_a_break(s, x):
    return s.format(x.sum().item()), x * 2


def formats_literal(x):
    return "{}".format(float(x.sum())), x + 1  # noqa: UP032 (the bound method is the point)


def test_str_methods_on_the_stack_at_a_break_do_not_recompile():
    # a break at .item() / float(), the format in Python, the rest in a second graph
    check_stable(formats_at_a_break, lambda i: ("v={}", np.full(3, 2.0)), graphs=2, breaks=1)
    check_stable(formats_literal, lambda i: (np.full(3, 2.0),), graphs=2, breaks=1)


def calls_a_passed_method(m, y):
    return m() + y


def test_bound_array_method_passed_in_becomes_a_graph_op():
    compiled, backend = check_stable(
        calls_a_passed_method, lambda i: (np.arange(3.0 + i % 1).sum, np.ones(())), graphs=1,
        breaks=0,
    )
    assert backend.op_names(0) == ["sum", "add"]


def test_bound_str_method_passed_in_is_guarded_on_which_method_it_is():
    compiled, _ = check_stable(calls_a_passed_method, lambda i: ("ab".upper, "c"), graphs=0,
                               breaks=1)
    # the call runs natively at a break, so the capture never reads the string: another
    # string reuses the entry; another method must not
    check_same(calls_a_passed_method, "xy".upper, "z", calls=1, compiled=compiled, graphs=0,
               breaks=1)
    check_same(calls_a_passed_method, "xy".lower, "z", calls=1, compiled=compiled, graphs=0,
               breaks=2)
    assert len(compiled_entries(compiled)) == 2


def dict_get_across_a_break(d, x):
    get = d.get
    print(float(x.sum()))
    d["b"] = x
    return get("b"), get("zz", 0)


def list_append_kept_in_a_local(lst, x):
    push = lst.append
    push(float(x.sum()))
    push(x)
    return len(lst)


def test_container_methods_bound_to_the_argument_see_its_mutations():
    check_stable(dict_get_across_a_break, lambda i: ({"a": i}, np.full(2, 3.0)), graphs=1,
                 breaks=1)
    check_stable(list_append_kept_in_a_local, lambda i: ([i], np.ones(2)), graphs=1, breaks=0)


def test_a_method_found_another_way_than_attribute_lookup_is_guarded_by_identity():
    lst = [1, 2, 3]
    ordinary = lst.__sizeof__
    through_super = super(list, lst).__sizeof__  # object.__sizeof__: another C function
    compiled = npdynamo.compile(calls_a_passed_method)
    # (graphs, breaks) so far: each method's call is a break (it runs natively), each method
    # its own entry
    for m, graphs, breaks in ((ordinary, 0, 1), (through_super, 1, 2), (ordinary, 1, 2)):
        check_same(calls_a_passed_method, m, 0, calls=1, compiled=compiled, graphs=graphs,
                   breaks=breaks)
    assert ordinary() != through_super()


def squared_norm(v, w):
    return (v * v * w).sum()


def applies_a_grad_function(g, x, w):
    return g(x, w)


def test_grad_wrapper_made_for_each_call_is_guarded_on_what_it_computes():
    compiled, _ = check_stable(
        applies_a_grad_function,
        lambda i: (npdynamo.value_and_grad(squared_norm), np.arange(3.0), np.full(3, 2.0)),
        graphs=1, breaks=0,
    )
    assert len(compiled_entries(compiled)) == 1
    # other settings, other entries: never the first entry's result
    for graphs, g in (
        (2, npdynamo.grad(squared_norm)),
        (3, npdynamo.value_and_grad(squared_norm, argnums=1)),
        (4, npdynamo.grad(squared_norm, argnums=(0, 1))),
    ):
        check_same(applies_a_grad_function, g, np.arange(3.0), np.full(3, 2.0), graphs=graphs,
                   breaks=0, compiled=compiled)
    assert len(compiled_entries(compiled)) == 4
