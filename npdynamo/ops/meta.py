"""What a graph value looks like without its data: the shape/dtype record op rules compute.

Every array-valued node of a graph carries an ``ArrayMeta`` under ``node.meta["val"]``. Rules in
``ops/`` compute these from the metas of their inputs (and Python scalars) without touching data.
A Python int or float graph input whose value is not known at capture (a *dynamic scalar*)
carries a ``ScalarMeta``: rules treat it as the weak Python scalar it is at run time (NEP 50).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npdynamo.ops.symbolic import SymInt, sym_product
from npdynamo.ops.symbolic_code import same_dim


@dataclass(frozen=True, eq=False)
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

    def __eq__(self, other: object) -> bool:
        # Structural: symbolic dimensions are equal when their expressions are (no fact is
        # recorded, so metas can be compared anywhere, e.g. by passes and backends).
        if not isinstance(other, ArrayMeta):
            return NotImplemented
        return (self.dtype == other.dtype and self.scalar == other.scalar
                and len(self.shape) == len(other.shape)
                and all(same_dim(a, b) for a, b in zip(self.shape, other.shape)))

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.scalar))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int | SymInt:
        return sym_product(self.shape)

    @property
    def nbytes(self) -> int | SymInt:
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


#: The Python scalar types a dynamic scalar may have (bool is strong in NumPy: never dynamic).
DYNAMIC_SCALAR_TYPES = (int, float, complex)


@dataclass(frozen=True)
class ScalarMeta:
    """A dynamic scalar: a Python ``int``/``float``/``complex`` graph input of unknown value.

    It promotes as the weak scalar it is (``lr * g`` with float32 ``g`` is float32; an int with
    an int8 array is int8, a float with an int array float64). Rules never see its value, so
    the checks NumPy makes on the value (a Python int out of an int8 array's range raises
    ``OverflowError``) happen at run time, in NumPy itself. Where NumPy converts it strongly
    (``np.asarray``) it is the dtype ``np.asarray`` gives: an int input is guarded to lie in
    int64 range (``shape_guards``), so that dtype is int64.
    """

    type: type

    def __post_init__(self) -> None:
        if self.type not in DYNAMIC_SCALAR_TYPES:
            raise ValueError(f"a dynamic scalar is an int, float or complex, not {self.type!r}")

    @property
    def array_dtype(self) -> np.dtype:
        """The dtype of ``np.asarray(value)`` (int64, float64, complex128)."""
        return np.dtype(self.type)

    def __str__(self) -> str:
        return f"weak {self.type.__name__}"
