"""What a graph value looks like without its data: the shape/dtype record op rules compute.

Every array-valued node of a graph carries an ``ArrayMeta`` under ``node.meta["val"]``. Rules in
``ops/`` compute these from the metas of their inputs (and Python scalars) without touching data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npdynamo.ops.symbolic import SymInt, sym_product


@dataclass(frozen=True)
class ArrayMeta:
    """Shape and dtype of an array value; ``scalar`` marks a NumPy scalar (``np.float64(1.0)``).

    NumPy returns a NumPy scalar, not a 0-d array, from ufuncs and full reductions whose result
    is 0-d; the flag keeps that difference visible so compiled code returns the same type.
    """

    shape: tuple[int | SymInt, ...]  # a dimension may be a symbolic size (ops/symbolic.py)
    dtype: np.dtype
    scalar: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(
            d if type(d) is int or isinstance(d, SymInt) else int(d) for d in self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        if self.scalar and self.shape != ():
            raise ValueError(f"a NumPy scalar has shape (), not {self.shape}")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int | SymInt:
        return sym_product(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @classmethod
    def of(cls, value: object) -> ArrayMeta:
        """The meta of a concrete ndarray or NumPy scalar."""
        if isinstance(value, np.ndarray):
            return cls(value.shape, value.dtype)
        if isinstance(value, np.generic):
            return cls((), value.dtype, scalar=True)
        raise TypeError(f"not an array or NumPy scalar: {type(value).__name__}")

    def __str__(self) -> str:
        kind = "scalar " if self.scalar else ""
        return f"{kind}{self.dtype}{list(self.shape)}"
