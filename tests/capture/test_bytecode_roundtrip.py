"""The bytecode layer on its own: every code object of large standard-library modules, decoded and
written back the way ``capture/bytecode/generate.py`` does it, runs unchanged.

Graph breaks and resume functions are built by editing decoded instruction lists; if reading and
writing an untouched code object changed its behaviour, every broken frame would be suspect. Each
module is compiled from its source, every nested code object is replaced by its round-tripped
copy, the module is executed from that code, and its functions are run against the original's.
"""

from __future__ import annotations

import difflib
import dis
import fractions
import importlib
import inspect
import json
import statistics
import sys
import textwrap
import types

import pytest

from npdynamo.capture.bytecode.generate import decode, encode


def round_trip(code: types.CodeType) -> types.CodeType:
    """Decode and re-encode ``code`` and, recursively, the code objects among its constants."""
    consts = tuple(round_trip(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    code = code.replace(co_consts=consts)
    return encode(decode(code))


def all_codes(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from all_codes(const)


def load_round_tripped(module: types.ModuleType) -> tuple[types.ModuleType, int]:
    """A fresh copy of ``module`` whose every code object went through the round trip."""
    source = inspect.getsource(module)
    code = compile(source, module.__file__, "exec")
    new_code = round_trip(code)
    copy = types.ModuleType(module.__name__ + "_round_tripped")
    copy.__file__ = module.__file__
    copy.__package__ = module.__package__
    # dataclasses and typing look the defining module up by name while the body runs
    sys.modules[copy.__name__] = copy
    try:
        exec(new_code, copy.__dict__)
    finally:
        del sys.modules[copy.__name__]
    return copy, sum(1 for _ in all_codes(code))


MODULES = ["textwrap", "difflib", "fractions", "statistics", "json.decoder", "json.encoder"]


def instructions(code: types.CodeType) -> list[tuple]:
    """What runs: opcode, argument (nested code by name) and line of every instruction."""
    return [
        (
            ins.opname,
            ins.argval.co_name if isinstance(ins.argval, types.CodeType) else ins.argval,
            ins.positions.lineno,
        )
        for ins in dis.get_instructions(code)
    ]


@pytest.mark.parametrize("name", MODULES)
def test_code_objects_survive_the_round_trip(name):
    module = importlib.import_module(name)
    code = compile(inspect.getsource(module), module.__file__, "exec")
    count = 0
    for original in all_codes(code):
        again = round_trip(original)
        assert instructions(again) == instructions(original), original.co_qualname
        assert again.co_exceptiontable == original.co_exceptiontable, original.co_qualname
        # name tables may be reordered or pruned (instructions index them, and are equal above);
        # the arguments' order may not change
        arguments = original.co_argcount + original.co_kwonlyargcount
        assert again.co_varnames[:arguments] == original.co_varnames[:arguments]
        for attr in ("co_cellvars", "co_freevars", "co_flags", "co_stacksize"):
            assert getattr(again, attr) == getattr(original, attr), (original.co_qualname, attr)
        count += 1
    assert count > 10  # large modules: many functions, classes and comprehensions


def test_textwrap_runs_unchanged():
    copy, _ = load_round_tripped(textwrap)
    text = "The quick brown fox jumps over the lazy dog. " * 7 + "\n\n  indented  tail\t!"
    for width in (10, 23, 40, 79):
        assert copy.fill(text, width) == textwrap.fill(text, width)
        assert copy.wrap(text, width, break_long_words=False) == textwrap.wrap(
            text, width, break_long_words=False
        )
        assert copy.shorten(text, width + 5) == textwrap.shorten(text, width + 5)
    assert copy.dedent("   a\n    b\n   c") == textwrap.dedent("   a\n    b\n   c")
    assert copy.indent("a\n\nb", "> ") == textwrap.indent("a\n\nb", "> ")


def test_difflib_runs_unchanged():
    copy, _ = load_round_tripped(difflib)
    a = [f"line {i} {'x' * (i % 5)}\n" for i in range(60)]
    b = [s.replace("x", "y") if i % 7 == 0 else s for i, s in enumerate(a) if i % 11]
    assert list(copy.unified_diff(a, b, "a", "b")) == list(difflib.unified_diff(a, b, "a", "b"))
    assert list(copy.ndiff(a[:15], b[:15])) == list(difflib.ndiff(a[:15], b[:15]))
    words = ["apple", "ape", "peach", "puppy", "apply", "maple"]
    assert copy.get_close_matches("appel", words) == difflib.get_close_matches("appel", words)
    assert copy.SequenceMatcher(None, "abcd" * 9, "abxd" * 8).ratio() == (
        difflib.SequenceMatcher(None, "abcd" * 9, "abxd" * 8).ratio()
    )


def test_fractions_and_statistics_run_unchanged():
    fr, _ = load_round_tripped(fractions)
    total_new, total_old = fr.Fraction(0), fractions.Fraction(0)
    for i in range(1, 40):
        total_new += fr.Fraction(i, i + 3) ** 2 - fr.Fraction("1/7")
        total_old += fractions.Fraction(i, i + 3) ** 2 - fractions.Fraction("1/7")
    assert (total_new.numerator, total_new.denominator) == (
        total_old.numerator,
        total_old.denominator,
    )
    assert str(fr.Fraction(3.25).limit_denominator(3)) == str(
        fractions.Fraction(3.25).limit_denominator(3)
    )
    with pytest.raises(ZeroDivisionError) as new_error:
        fr.Fraction(1, 0)
    with pytest.raises(ZeroDivisionError) as old_error:
        fractions.Fraction(1, 0)
    assert str(new_error.value) == str(old_error.value)

    st, _ = load_round_tripped(statistics)
    data = [2.5, 3.25, 5.0, 1.75, 9.5, 4.0, 4.0, 7.25]
    for name in ("mean", "median", "median_low", "median_high", "mode", "pstdev", "stdev"):
        assert getattr(st, name)(data) == getattr(statistics, name)(data), name
    assert st.quantiles(data, n=4) == statistics.quantiles(data, n=4)
    with pytest.raises(st.StatisticsError):
        st.mean([])


def test_json_runs_unchanged():
    dec, _ = load_round_tripped(json.decoder)
    enc, _ = load_round_tripped(json.encoder)
    doc = {"a": [1, 2.5, None, True, {"b": "c\u00e9\n"}], "d": -3e-7, "e": '\\"', "f": []}
    text = json.dumps(doc, indent=2, sort_keys=True)
    assert enc.JSONEncoder(indent=2, sort_keys=True).encode(doc) == text
    assert enc.py_encode_basestring_ascii('x\u00e9"') == json.encoder.py_encode_basestring_ascii(
        'x\u00e9"'
    )
    decoder = dec.JSONDecoder()
    assert decoder.decode(text) == doc
    with pytest.raises(dec.JSONDecodeError) as error:
        decoder.decode('{"a": [1, 2,, 3]}')
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads('{"a": [1, 2,, 3]}')
    assert str(error.value) == str(expected.value)
