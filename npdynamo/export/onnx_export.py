"""``ExportedProgram.to_onnx``: write an exported program as an ONNX model.

Joins the lowering (``onnx_writer.Lowering``) with the op tables (``onnx_ops``: elementwise ops,
reductions, linear algebra; ``onnx_shapes``: shapes, creation, indexing, control flow;
``onnx_numeric``: statistics, scans, sorting), checks the model with ``onnx.checker`` and saves
it. Needs the ``onnx`` extra.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from npdynamo.export import onnx_arrays, onnx_math, onnx_numeric, onnx_ops, onnx_shapes, onnx_stats
from npdynamo.export.onnx_writer import OPSET, Lowering

if TYPE_CHECKING:
    from npdynamo.export.program import ExportedProgram

LOWERINGS = {**onnx_ops.LOWERINGS, **onnx_shapes.LOWERINGS, **onnx_numeric.LOWERINGS,
             **onnx_math.LOWERINGS, **onnx_stats.LOWERINGS, **onnx_arrays.LOWERINGS}


def onnx_supported_ops() -> list[str]:
    """The canonical ops ``to_onnx`` can write (some only for some arguments: see the docs)."""
    return sorted(LOWERINGS)


def to_onnx(ep: ExportedProgram, path: str | os.PathLike | None = None,
            opset: int | None = None):
    """The ONNX ``ModelProto`` of ``ep``, checked by ``onnx.checker``; saved when ``path``."""
    import onnx
    from onnx import helper

    opset = opset or OPSET
    graph = Lowering(ep, helper, onnx, LOWERINGS, opset).main()
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="npdynamo")
    model.ir_version = min(model.ir_version, 10)  # what current ONNX Runtime releases read
    onnx.checker.check_model(model, full_check=True)
    if path is not None:
        onnx.save(model, os.fspath(path))
    return model
