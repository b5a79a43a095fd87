"""Helpers the generated numba kernels call (the numba backend's small runtime library).

Kernels are compiled without fast-math flags so that every elementwise operation rounds exactly
as NumPy's does. Reductions still need to vectorise, so their accumulation step is a separate
``njit`` function that alone carries the ``reassoc`` flag: LLVM inlines it and the flag stays on
that one instruction (allowing the reassociation of the sum, never ``nnan``/``ninf``).
``maximum``/``minimum`` are LLVM's NaN-propagating intrinsics, which LLVM vectorises as
reductions where a compare-and-select chain stays scalar.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_REASSOC = {"reassoc"}


@njit(fastmath=_REASSOC, error_model="numpy")
def radd(acc, value):
    """``acc + value`` that LLVM may reassociate (float sums and means)."""
    return acc + value


@njit(fastmath=_REASSOC, error_model="numpy")
def rmul(acc, value):
    """``acc * value`` that LLVM may reassociate (float products)."""
    return acc * value


def _float_binary_intrinsic(llvm_name: str):
    @intrinsic
    def call(typingctx, a, b):
        if not (isinstance(a, types.Float) and a == b):
            return None

        def codegen(context, builder, signature, args):
            ty = context.get_value_type(signature.return_type)
            fnty = ir.FunctionType(ty, [ty, ty])
            suffix = "f32" if a.bitwidth == 32 else "f64"
            fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.{llvm_name}.{suffix}")
            return builder.call(fn, args)

        return a(a, a), codegen

    return call


#: NaN-propagating max of two floats of one type (IEEE 754-2019 ``maximum``).
fmaximum = _float_binary_intrinsic("maximum")
#: NaN-propagating min of two floats of one type (IEEE 754-2019 ``minimum``).
fminimum = _float_binary_intrinsic("minimum")
