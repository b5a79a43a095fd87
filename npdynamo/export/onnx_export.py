"""``ExportedProgram.to_onnx``: write an exported program as an ONNX model.

Joins the lowering (``onnx_writer.Lowering``) with the op tables (``onnx_ops``: elementwise ops,
reductions, linear algebra; ``onnx_shapes``: shapes, creation, indexing, control flow;
``onnx_numeric``: statistics, scans, sorting; ``onnx_math``: composite elementwise math;
``onnx_stats``: NaN-aware reductions, quantiles, products along an axis, searching;
``onnx_arrays``: array building, diagonals, products of arrays, writes into a copy;
``choice``: speculated choices), checks
the model with ``onnx.checker`` and saves it. Needs the ``onnx`` extra.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from npdynamo.export import (
    choice,
    onnx_arrays,
    onnx_complex,
    onnx_math,
    onnx_numeric,
    onnx_ops,
    onnx_shapes,
    onnx_stats,
)
from npdynamo.export.onnx_writer import OPSET, Lowering

if TYPE_CHECKING:
    from npdynamo.export.program import ExportedProgram

LOWERINGS = {**onnx_ops.LOWERINGS, **onnx_shapes.LOWERINGS, **onnx_numeric.LOWERINGS,
             **onnx_math.LOWERINGS, **onnx_stats.LOWERINGS, **onnx_arrays.LOWERINGS,
             **choice.LOWERINGS}


_DECOMPOSITION = "a LAPACK decomposition or solver (no ONNX op; a loop of ONNX ops would not " \
    "round as LAPACK does)"
_RANDOM = "a random draw (NumPy's generators have no ONNX form)"

#: the canonical ops without an ONNX form, and why
NOT_EXPORTED: dict[str, str] = {
    **dict.fromkeys(["cholesky", "eig", "eigh", "eigvalsh", "inv", "lstsq", "pinv", "qr",
                     "slogdet", "solve", "svd", "svdvals"], _DECOMPOSITION),
    "draw": _RANDOM, "shuffled": _RANDOM,
    "histogram": "not written yet (NumPy's bin index arithmetic with its edge corrections)",
    "nonzero": "not written yet (ONNX's NonZero, with its results' size known only at run time)",
    "partition": "NumPy's order of the elements around the kth is its introselect's own",
    "argpartition": "NumPy's order of the elements around the kth is its introselect's own",
    "signbit": "ONNX cannot read the sign bit of a NaN",
    "copysign": "ONNX cannot read the sign bit of a NaN",
    "nextafter": "needs bit casts (not in opset 18)",
    "i0": "not written yet (Cephes' Chebyshev series would do)",
    "fori_loop_vjp": "the backward of a rolled loop (not written yet)",
    "asserted": "an assert checked at run time makes a failing call rerun in Python, which a "
                "model cannot do",
}


def onnx_supported_ops() -> list[str]:
    """The canonical ops ``to_onnx`` can write (some only for some arguments or dtypes:
    ``docs/export.md`` lists the limits; ``NOT_EXPORTED`` says why the others are not)."""
    return sorted(LOWERINGS)


def to_onnx(ep: ExportedProgram, path: str | os.PathLike | None = None,
            opset: int | None = None):
    """The ONNX ``ModelProto`` of ``ep``, checked by ``onnx.checker``; saved when ``path``."""
    import onnx
    from onnx import helper

    opset = opset or OPSET
    graph = Lowering(ep, helper, onnx, LOWERINGS, opset, onnx_complex.LOWERINGS).main()
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="npdynamo")
    model.ir_version = min(model.ir_version, 10)  # what current ONNX Runtime releases read
    onnx.checker.check_model(model, full_check=True)
    if path is not None:
        onnx.save(model, os.fspath(path))
    return model
