"""Matrix decompositions with several results: ``np.linalg.slogdet``, ``qr``, ``eigh``, ``eig``,
``svd``, ``lstsq``; and ``tuple_item``, the projection that picks one result.

Each is one opaque op whose rule returns a tuple of metas (one per result), as NumPy's LAPACK
call computes them together; the graph holds it as one node and reads its results through
``tuple_item`` nodes (like torch.fx's ``getitem`` on a multi-output node). ``result_type(kwargs)``
gives the named tuple class NumPy returns, which the capture stage rebuilds. Rules follow
``np.linalg``: stacks of matrices in the last two axes, float64 for integer and boolean input,
float16 refused, real eigenvalues and singular values for complex input.

``lstsq``'s residuals have a size that depends on the rank NumPy finds: empty unless the
matrix is tall and of full rank. The rule assumes full rank for a tall matrix; when NumPy finds
a lower rank at run time the op raises ``RankDeficient``, and a graph that raises is rerun in
plain Python, so the user still sees exactly NumPy's results.

``eig`` of a real matrix returns real arrays when every eigenvalue is real and complex ones
otherwise: a dtype that depends on the data. The rule gives complex results (what a general
matrix has); when NumPy returns real ones the op raises ``RealEigenvalues`` and the graph reruns
in plain Python the same way. It has no gradient rule (``differentiable=False``: a GradError).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.linalg import LinAlgError

from npdynamo.ops import canonical as C
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import REGISTRY, Op, UnsupportedArguments, register
from npdynamo.ops.rules import to_meta
from npdynamo.ops.solvers import _real, _square_stack, linalg, linalg_dtype


def _result_type(fn: Any, *args: Any):
    """``result_type(kwargs)``: the class NumPy returns the results in, given the op's kwargs."""
    cls = type(fn(*args))
    return lambda kwargs: cls


_EYE = np.eye(1)
_QR = type(np.linalg.qr(_EYE))


def _stacked(name: str, a: object, square: bool) -> tuple[ArrayMeta, np.dtype]:
    meta = to_meta(name, a)
    _square_stack(name, meta, square)
    return meta, linalg_dtype(name, meta)


def _metas(*pairs: tuple[tuple, np.dtype]) -> tuple[ArrayMeta, ...]:
    return tuple(ArrayMeta(shape, dtype, scalar=shape == ()) for shape, dtype in pairs)


# -- the projection ------------------------------------------------------------------------
# -- rules ---------------------------------------------------------------------------------
def _slogdet_rule(a: object) -> tuple[ArrayMeta, ...]:
    meta, dtype = _stacked("slogdet", a, True)
    batch = meta.shape[:-2]
    return _metas((batch, dtype), (batch, _real(dtype)))


def _eigh_rule(a: object, *, UPLO: str = "L") -> tuple[ArrayMeta, ...]:
    meta, dtype = _stacked("eigh", a, True)
    return _metas((meta.shape[:-1], _real(dtype)), (meta.shape, dtype))


def _svd_rule(a: object, *, full_matrices: bool = True,
              hermitian: bool = False) -> tuple[ArrayMeta, ...]:
    meta, dtype = _stacked("svd", a, hermitian)
    *batch, m, n = meta.shape
    k = min(m, n)
    u, vh = ((m, m), (n, n)) if full_matrices else ((m, k), (k, n))
    b = tuple(batch)
    return _metas((b + u, dtype), (b + (k,), _real(dtype)), (b + vh, dtype))


def _qr_rule(a: object, *, mode: str = "reduced") -> ArrayMeta | tuple[ArrayMeta, ...]:
    meta, dtype = _stacked("qr", a, False)
    *batch, m, n = meta.shape
    k, b = min(m, n), tuple(batch)
    if mode == "r":
        return ArrayMeta(b + (k, n), dtype)
    if mode == "raw":
        return _metas((b + (n, m), dtype), (b + (k,), dtype))
    if mode == "complete":
        return _metas((b + (m, m), dtype), (b + (m, n), dtype))
    return _metas((b + (m, k), dtype), (b + (k, n), dtype))


def _eig_rule(a: object) -> tuple[ArrayMeta, ...]:
    meta, dtype = _stacked("eig", a, True)
    complex_dtype = np.result_type(dtype, np.complex64)
    return _metas((meta.shape[:-1], complex_dtype), (meta.shape, complex_dtype))


def _lstsq_rule(a: object, b: object, *, rcond: float | None = None) -> tuple[ArrayMeta, ...]:
    am, bm = to_meta("lstsq", a), to_meta("lstsq", b)
    rhs = bm.shape + (1,) if bm.ndim == 1 else bm.shape
    for meta in (am, ArrayMeta(rhs, bm.dtype)):
        if len(meta.shape) != 2:
            raise LinAlgError(
                f"{len(meta.shape)}-dimensional array given. Array must be two-dimensional")
    m, n = am.shape
    if m != rhs[0]:
        raise LinAlgError("Incompatible dimensions")
    dtype = linalg_dtype("lstsq", am, bm)
    real = _real(dtype)
    x_shape = (n,) if bm.ndim == 1 else (n, rhs[1])
    return (ArrayMeta(x_shape, dtype), ArrayMeta(_lstsq_residuals(m, n, rhs[1]), real),
            ArrayMeta((), np.dtype(np.int32), scalar=True), ArrayMeta((min(m, n),), real))


def _lstsq_residuals(m: int, n: int, n_rhs: int) -> tuple[int]:
    """The residuals' shape when ``a`` has full rank (see the module docstring)."""
    return (0,) if m <= n else (n_rhs,)


class RankDeficient(ArithmeticError):
    """``lstsq`` found a rank its graph did not assume: the graph reruns in plain Python."""


def _lstsq(a, b, *, rcond=None):
    x, residuals, rank, s = np.linalg.lstsq(a, b, rcond=rcond)
    m, n = np.shape(a)
    n_rhs = 1 if np.ndim(b) == 1 else np.shape(b)[1]
    if residuals.shape != _lstsq_residuals(m, n, n_rhs):
        raise RankDeficient(f"lstsq: rank {rank} < {n}; the residuals are empty")
    return x, residuals, rank, s


class RealEigenvalues(ArithmeticError):
    """``eig`` of a real matrix found only real eigenvalues: NumPy returns real arrays where the
    graph assumed complex ones, so the graph reruns in plain Python."""


def _eig(a):
    result = np.linalg.eig(a)
    if result.eigenvalues.dtype.kind != "c":
        raise RealEigenvalues("eig: every eigenvalue is real; NumPy returns real arrays")
    return result


def _svd(a, *, full_matrices=True, hermitian=False):
    return np.linalg.svd(a, full_matrices=full_matrices, hermitian=hermitian)


def _qr(a, *, mode="reduced"):
    return np.linalg.qr(a, mode=mode)


def _eigh(a, *, UPLO="L"):
    return np.linalg.eigh(a, UPLO=UPLO)


for _op, _type in (
    (Op("slogdet", np.linalg.slogdet, _slogdet_rule), _result_type(np.linalg.slogdet, _EYE)),
    (Op("eigh", _eigh, _eigh_rule, defaults={"UPLO": "L"}), _result_type(np.linalg.eigh, _EYE)),
    (Op("eig", _eig, _eig_rule, differentiable=False), _result_type(np.linalg.eig, _EYE)),
    (Op("svd", _svd, _svd_rule, defaults={"full_matrices": True, "hermitian": False}),
     _result_type(np.linalg.svd, _EYE)),
    (Op("qr", _qr, _qr_rule, defaults={"mode": "reduced"}),
     lambda kwargs: tuple if kwargs.get("mode") == "raw" else _QR),
    (Op("lstsq", _lstsq, _lstsq_rule, defaults={"rcond": None}), lambda kwargs: tuple),
):
    _op.result_type = _type  # type: ignore[attr-defined]
    register(_op)

# -- binders -------------------------------------------------------------------------------
@linalg("slogdet")
def _slogdet_binder(a):
    return C.canon(REGISTRY["slogdet"], [C.operand("slogdet", a)])


@linalg("eigh")
def _eigh_binder(a, UPLO="L"):
    C.static("eigh", "UPLO", UPLO)
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return C.canon(REGISTRY["eigh"], [C.operand("eigh", a)], UPLO=UPLO)


@linalg("eig")
def _eig_binder(a):
    return C.canon(REGISTRY["eig"], [C.operand("eig", a)])


@linalg("svd")
def _svd_binder(a, full_matrices=True, compute_uv=True, hermitian=False):
    flags = {p: C.flag("svd", p, v) for p, v in
             (("full_matrices", full_matrices), ("compute_uv", compute_uv),
              ("hermitian", hermitian))}
    if not flags["compute_uv"]:
        if flags["hermitian"]:
            raise UnsupportedArguments("svd: compute_uv=False with hermitian=True")
        return C.canon(REGISTRY["svdvals"], [C.operand("svd", a)])
    return C.canon(REGISTRY["svd"], [C.operand("svd", a)],
                   full_matrices=flags["full_matrices"], hermitian=flags["hermitian"])


@linalg("qr")
def _qr_binder(a, mode="reduced"):
    C.static("qr", "mode", mode)
    if mode not in ("reduced", "complete", "r", "raw"):
        raise UnsupportedArguments(f"qr: mode={mode!r}")  # deprecated spellings, errors
    return C.canon(REGISTRY["qr"], [C.operand("qr", a)], mode=mode)


@linalg("lstsq")
def _lstsq_binder(a, b, rcond=None):
    C.static("lstsq", "rcond", rcond)
    return C.canon(REGISTRY["lstsq"], [C.operand("lstsq", a), C.operand("lstsq", b)],
                   rcond=rcond)
