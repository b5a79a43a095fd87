"""The elementwise table of the numba backend: each ufunc as scalar numba source, per dtypes.

``UFUNC_EMITTERS[name](in_dtypes, out_dtype, operands)`` returns the expression computing one
element of ufunc ``name`` for NumPy's resolved loop (``None``: that loop has no kernel code, the
node runs as a NumPy call), with the dtype helpers it is written with (``dtype_ctor``,
``literal``, ``cast``, ``wrap``). ``lowering`` decides which nodes reach it and with which
dtypes; the accuracy of each entry is described there.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from npdynamo.backends.numba.approx import APPROXIMATIONS

# -- dtypes, literals and casts --------------------------------------------------------------


def dtype_ctor(dtype: np.dtype) -> str:
    """The numba-visible constructor of a scalar of ``dtype``: ``np.float32`` etc."""
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


def _float_text(f: float) -> str:
    return "np.nan" if f != f else ("np.inf" if f == np.inf else "-np.inf" if f == -np.inf
                                    else repr(f))


def literal(value: object, dtype: np.dtype) -> str:
    """Source for the constant ``value`` converted to ``dtype`` the way a ufunc loop converts it."""
    converted = np.array(value).astype(dtype)[()]
    if dtype.kind == "b":
        return "True" if converted else "False"
    if dtype.kind == "f":
        return f"{dtype_ctor(dtype)}({_float_text(float(converted))})"
    if dtype.kind == "c":
        parts = (_float_text(float(converted.real)), _float_text(float(converted.imag)))
        return f"{dtype_ctor(dtype)}(complex({parts[0]}, {parts[1]}))"
    return f"{dtype_ctor(dtype)}({int(converted)})"


def cast(expr: str, src: np.dtype, dst: np.dtype) -> str:
    """``expr`` (a scalar of dtype ``src``) converted to ``dst`` as NumPy's ``astype`` does."""
    if src == dst:
        return expr
    if dst.kind == "b":
        return f"({expr} != 0)"
    if dst.kind == "c" and src.kind == "b":
        return f"{dtype_ctor(dst)}(np.float64({expr}))"
    return f"{dtype_ctor(dst)}({expr})"


def wrap(expr: str, dtype: np.dtype) -> str:
    # numba computes narrow integers as int64: converting back wraps exactly as NumPy does.
    return f"{dtype_ctor(dtype)}({expr})" if dtype.kind in "iu" else f"({expr})"


# -- the elementwise table -------------------------------------------------------------------

Emitter = Callable[[tuple[np.dtype, ...], np.dtype, list[str]], str | None]


_WRAPPING = {"+": "wrapping_add", "-": "wrapping_sub", "*": "wrapping_mul"}


def wrapping_arithmetic(symbol: str, a: str, b: str, dtype: np.dtype) -> str:
    """``a <symbol> b`` of ``dtype`` as kernel source, wrapping on integer overflow as NumPy
    does (``runtime.wrapping_add``: numba's own signed operators leave overflow undefined)."""
    if dtype == np.int64:
        return f"{_WRAPPING[symbol]}(np.int64({a}), np.int64({b}))"
    return wrap(f"{a} {symbol} {b}", dtype)


def _complex_helper(name: str, dtype: np.dtype) -> str:
    """The ``runtime`` helper computing complex ``name`` as NumPy's loop for ``dtype``."""
    return f"complex_{name}_c{dtype.itemsize * 8}"


def _binary(symbol: str, bool_symbol: str | None = None) -> Emitter:
    def emit(ins, out, e):
        if out.kind == "b":
            return None if bool_symbol is None else f"({e[0]} {bool_symbol} {e[1]})"
        if out.kind == "c" and symbol == "*":
            return f"{_complex_helper('multiply', out)}({e[0]}, {e[1]})"
        return wrapping_arithmetic(symbol, e[0], e[1], out)

    return emit


def _divide(ins, out, e):
    if ins[0] != out or ins[1] != out:
        return None
    if out.kind == "c":
        return f"{_complex_helper('divide', out)}({e[0]}, {e[1]})"
    return f"({e[0]} / {e[1]})" if out.kind == "f" else None


def _negative(ins, out, e):
    return None if out.kind == "b" else wrap(f"-{e[0]}", out)


def _absolute(ins, out, e):
    if ins[0].kind == "c":
        return f"{_complex_helper('abs', ins[0])}({e[0]})"
    if out.kind == "f":
        return f"np.abs({e[0]})"
    if out.kind in "ub":
        return e[0]
    return wrap(f"{e[0]} if {e[0]} >= 0 else -{e[0]}", out)


def _square(ins, out, e):
    return e[0] if out.kind == "b" else _binary("*")(ins, out, [e[0], e[0]])


def _rounding(fn: str) -> Emitter:
    def emit(ins, out, e):
        if ins[0] != out or out.kind == "c":
            return None
        return f"{fn}({e[0]})" if out.kind == "f" else e[0]

    return emit


def _reciprocal(ins, out, e):
    return f"({literal(1, out)} / {e[0]})" if out.kind == "f" else None


def _sign(ins, out, e):
    if out.kind in "bc":
        return None
    one, zero, x = literal(1, out), literal(0, out), e[0]
    if out.kind == "u":
        return f"({one} if {x} > 0 else {zero})"
    minus = literal(-1, out)
    # zeros (either sign) give +0 and nan gives nan, as NumPy's sign does
    return f"({one} if {x} > 0 else ({minus} if {x} < 0 else ({zero} if {x} == 0 else {x})))"


def _extremum(order: str, bool_symbol: str, keep_nan_of: int) -> Emitter:
    """maximum (``order`` ``>``) or minimum (``<``): ``a`` where it wins, else ``b``. Floats:
    the nan of operand ``keep_nan_of`` wins too (0, ``a``: maximum/minimum propagate a nan;
    1, ``b``: fmax/fmin return the other operand)."""
    def emit(ins, out, e):
        a, b = e
        if out.kind == "c":  # NumPy orders complex values lexicographically
            return None
        if out.kind == "b":
            return f"({a} {bool_symbol} {b})"
        nan = f" or {e[keep_nan_of]} != {e[keep_nan_of]}" if out.kind == "f" else ""
        return f"({a} if ({a} {order} {b}{nan}) else {b})"

    return emit


_maximum, _minimum = _extremum(">", "|", 0), _extremum("<", "&", 0)
_fmax, _fmin = _extremum(">", "|", 1), _extremum("<", "&", 1)


def _compare(symbol: str) -> Emitter:
    def emit(ins, out, e):
        # NumPy compares mixed signed/unsigned integers exactly with dedicated loops, and
        # orders complex values lexicographically (numba has only == and != on them)
        if ins[0] != ins[1] or (ins[0].kind == "c" and symbol not in ("==", "!=")):
            return None
        return f"({e[0]} {symbol} {e[1]})"

    return emit


def _logical(symbol: str) -> Emitter:
    def emit(ins, out, e):
        return f"(({e[0]} != 0) {symbol} ({e[1]} != 0))"

    return emit


def _logical_not(ins, out, e):
    return f"({e[0]} == 0)"


def _isnan(ins, out, e):
    return f"({e[0]} != {e[0]})" if ins[0].kind in "fc" else "False"


def _infinity_test(symbol: str, join: str, integers: str) -> Emitter:
    """isinf (``|x| == inf``, either part of a complex) or isfinite (``|x| < inf``, both
    parts); ``integers``: the constant result on integers and booleans."""
    def emit(ins, out, e):
        if ins[0].kind not in "fc":
            return integers
        parts = [f"{e[0]}.real", f"{e[0]}.imag"] if ins[0].kind == "c" else [e[0]]
        inf = literal(np.inf, np.finfo(ins[0]).dtype)
        return f"({f' {join} '.join(f'np.abs({p}) {symbol} {inf}' for p in parts)})"

    return emit


_isinf, _isfinite = _infinity_test("==", "or", "False"), _infinity_test("<", "and", "True")


def _invert(ins, out, e):
    if out.kind == "b":
        return f"(not {e[0]})"
    return wrap(f"~{e[0]}", out) if out.kind in "iu" else None


def _bitwise(symbol: str) -> Emitter:
    def emit(ins, out, e):
        return wrap(f"{e[0]} {symbol} {e[1]}", out) if out.kind in "iub" else None

    return emit


def _shift_count_fits(count: str, dtype: np.dtype) -> str:
    """``0 <= count < bits of dtype``: the shifts C defines (LLVM's are poison beyond)."""
    width = literal(dtype.itemsize * 8, dtype)
    return f"{count} < {width}" if dtype.kind == "u" else \
        f"({count} >= {literal(0, dtype)} and {count} < {width})"


def _shift(symbol: str) -> Emitter:
    """NumPy's ``<<`` / ``>>`` on integers: a count outside [0, bits) shifts every bit out
    (0; a negative value shifted right keeps its sign, -1); bits shifted past the sign wrap,
    and signed values shift right arithmetically."""
    def emit(ins, out, e):
        if out.kind not in "iu":
            return None
        a, b = e
        zero = literal(0, out)
        beyond = zero if symbol == "<<" or out.kind == "u" else \
            f"({literal(-1, out)} if {a} < {zero} else {zero})"
        return f"({wrap(f'{a} {symbol} {b}', out)} if {_shift_count_fits(b, out)} else {beyond})"

    return emit


def _same_float(ins: tuple[np.dtype, ...], out: np.dtype) -> bool:
    return out.kind == "f" and all(d == out for d in ins)


def _bits(dtype: np.dtype) -> str:
    return f"f{dtype.itemsize * 8}"


def _float_calls(fn: str) -> Emitter:
    """A float ufunc of any arity computed by numba's own scalar ``np.<fn>`` (libm), for the
    loops whose inputs all have the output's float dtype."""
    def emit(ins, out, e):
        return f"np.{fn}({', '.join(e)})" if _same_float(ins, out) else None

    return emit


UFUNC_EMITTERS: dict[str, Emitter] = {
    "add": _binary("+", "|"),
    "subtract": _binary("-"),
    "multiply": _binary("*", "&"),
    "divide": _divide,
    "negative": _negative,
    "positive": lambda ins, out, e: e[0],
    "absolute": _absolute,
    "fabs": _float_calls("abs"),
    "square": _square,
    "sqrt": _float_calls("sqrt"),
    "reciprocal": _reciprocal,
    "sign": _sign,
    "floor": _rounding("np.floor"),
    "ceil": _rounding("np.ceil"),
    "trunc": _rounding("np.trunc"),
    "rint": _rounding("np.rint"),
    # the identity on real dtypes
    "conjugate": lambda ins, out, e: None if ins[0] != out or out.kind == "b" else (
        f"np.conj({e[0]})" if out.kind == "c" else e[0]),
    "maximum": _maximum,
    "minimum": _minimum,
    "fmax": _fmax,
    "fmin": _fmin,
    "equal": _compare("=="),
    "not_equal": _compare("!="),
    "less": _compare("<"),
    "less_equal": _compare("<="),
    "greater": _compare(">"),
    "greater_equal": _compare(">="),
    "logical_and": _logical("&"),
    "logical_or": _logical("|"),
    "logical_xor": _logical("!="),
    "logical_not": _logical_not,
    "isnan": _isnan,
    "isinf": _isinf,
    "isfinite": _isfinite,
    "invert": _invert,
    "bitwise_and": _bitwise("&"),
    "bitwise_or": _bitwise("|"),
    "bitwise_xor": _bitwise("^"),
    "left_shift": _shift("<<"),
    "right_shift": _shift(">>"),
}


def _approx(name: str) -> Emitter:
    def emit(ins, out, e):
        helper = APPROXIMATIONS.get((name, out))
        return f"{helper}({e[0]})" if helper is not None and ins[0] == out else None

    return emit


for _name in ("exp", "tanh", "log"):
    UFUNC_EMITTERS[_name] = _approx(_name)


# Float ufuncs without a vectorised approximation: scalar libm calls (within 3 ulps of NumPy's,
# nan/inf/zeros as NumPy's, measured). A loop with a call does not vectorise, but the graph
# around it stays one pass over memory. (Float // and % are NumPy's own steps, ``runtime``:
# numba's np.remainder differs from NumPy's at zeros, infinities and signs.)
LIBM_OPS = ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
            "arccosh", "arctanh", "log2", "log10", "log1p", "expm1", "exp2", "cbrt",
            "deg2rad", "rad2deg", "arctan2", "hypot", "copysign", "logaddexp", "logaddexp2",
            "nextafter", "fmod", "float_power")
for _name in LIBM_OPS:
    UFUNC_EMITTERS[_name] = _float_calls(_name)
def _float_helper(name: str) -> Emitter:
    """``runtime``'s NumPy step for float ``name`` (``floor_divide_f64`` ...)."""
    def emit(ins, out, e):
        return f"{name}_{_bits(out)}({', '.join(e)})" if _same_float(ins, out) else None

    return emit


for _name in ("floor_divide", "remainder"):
    UFUNC_EMITTERS[_name] = _float_helper(_name)


def _heaviside(ins, out, e):
    if not _same_float(ins, out):
        return None
    x, h0 = e
    return (f"({literal(0, out)} if {x} < 0 else ({h0} if {x} == 0 else "
            f"({x} if {x} != {x} else {literal(1, out)})))")


UFUNC_EMITTERS["heaviside"] = _heaviside
UFUNC_EMITTERS["signbit"] = (
    lambda ins, out, e: f"np.signbit({e[0]})" if ins[0].kind == "f" and out.kind == "b" else None)
