"""``x.real`` and ``x.imag`` of a complex array: views of its real and imaginary parts.

NumPy returns views that share the complex array's memory, so they are view ops (the capture
stage tracks them: writes to the complex array show through, writes through them break). The
capture stage asks for them only on complex arrays: a real array's ``.real`` is the array itself
and its ``.imag`` a new read-only array, which it leaves to Python.
"""

from __future__ import annotations

import numpy as np

from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import Op, register
from npdynamo.ops.rules import to_meta


def _part_rule(name: str):
    def rule(x: object) -> ArrayMeta:
        meta = to_meta(name, x)
        dtype = np.finfo(meta.dtype).dtype if meta.dtype.kind == "c" else meta.dtype
        return ArrayMeta(meta.shape, dtype, scalar=meta.scalar)

    return rule


for _name, _impl in (("real", np.real), ("imag", np.imag)):
    register(Op(_name, _impl, _part_rule(_name), differentiable=False, view=True))
