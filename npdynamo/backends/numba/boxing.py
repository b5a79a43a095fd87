"""How a loop program hands its results to Python: boxed by its own machine code.

Last step of a whole graph's numba function (``loop_program.whole_graph_program``) and of a
loop's program (``loop_program.loop_programs``): their ``return`` wraps each result in one of
the two markers below, which change only how numba's entry point boxes the value when it
returns to Python, never the value:

* ``numpy_scalar(x)``: a number boxed as the NumPy scalar of its dtype (``np.int64``,
  ``np.float32``, ``np.bool_`` ...), as NumPy's own scalar results are. numba boxes a number as
  a Python ``int``/``float``/``bool``, which the warm path then had to turn into the NumPy
  scalar in Python: ``np.int64(x)`` costs ~160 ns, more than a small kernel. The box calls
  NumPy's ``PyArray_Scalar`` (``scalar_maker``: the address from NumPy's C API table,
  checked once per process) on the value's bytes.
* ``returned_array(a)``: an array boxed as numba boxes it (a new ``ndarray`` owning the
  buffer, or the argument itself when the array is one unchanged), but with the
  ``ndarray`` class read from the function's environment. numba's own box of an array
  rebuilds that class from a pickle at each return (``numba_unpickle``, a Python call per
  array: the frames ``tests/backends/test_guarded_warm_path`` sees under a warm call).

A value neither marker knows (a tuple, a 0-d array) passes through as numba would box it.
Without ``PyArray_Scalar`` (its address not found, or the check of what it makes failing),
``numpy_scalar`` is not used: ``loop_program`` converts the boxed numbers in Python as before.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.datamodel import models
from numba.extending import box, intrinsic, register_model
from numba.np import numpy_support

#: the symbol the machine code calls to make a NumPy scalar; an address given to LLVM per
#: process (cached machine code names it and is linked again when loaded)
_SCALAR_SYMBOL = "npdynamo_PyArray_Scalar"
#: ``PyArray_Scalar``'s slot in NumPy's C API table (``__multiarray_api.h``; the slots are
#: NumPy's ABI, fixed since 1.x; ``tests/backends/test_boxing.py`` reads the header)
ARRAY_SCALAR_SLOT = 60


def _array_api_table() -> int | None:
    try:
        from numpy._core import _multiarray_umath
    except ImportError:  # pragma: no cover (NumPy 1.x)
        from numpy.core import _multiarray_umath
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    try:
        return get(_multiarray_umath._ARRAY_API, None)
    except (AttributeError, ValueError):
        return None


def _register_scalar_maker() -> bool:
    """Give LLVM ``PyArray_Scalar``'s address, after checking it makes the scalars exactly."""
    table = _array_api_table()
    if not table:
        return False
    address = ctypes.c_void_p.from_address(table + ARRAY_SCALAR_SLOT *
                                           ctypes.sizeof(ctypes.c_void_p)).value
    if not address:
        return False
    maker = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object,
                              ctypes.c_void_p)(address)
    for value in (np.int64(-12345), np.float32(-0.0), np.float64(np.nan), np.bool_(True),
                  np.uint8(200)):
        probe = np.array([value])
        made = maker(probe.ctypes.data, probe.dtype, None)
        if type(made) is not type(value) or made.tobytes() != value.tobytes():
            return False
    llvm.add_symbol(_SCALAR_SYMBOL, address)
    return True


#: whether ``numpy_scalar`` boxes NumPy scalars in this process
SCALARS_BOXED: bool = _register_scalar_maker()


# -- the NumPy scalar marker ------------------------------------------------------------
class NumPyScalar(types.Type):
    """A number that boxes as the NumPy scalar of its dtype (``base``: its numba type)."""

    def __init__(self, base: types.Type) -> None:
        self.base = base
        super().__init__(name=f"numpy_scalar({base})")

    @property
    def key(self) -> Any:
        return self.base

    @property
    def dtype(self) -> np.dtype:
        return numpy_support.as_dtype(self.base)


@register_model(NumPyScalar)
class _NumPyScalarModel(models.ProxyModel):
    def __init__(self, dmm: Any, fe_type: NumPyScalar) -> None:
        self._proxied_model = dmm.lookup(fe_type.base)
        super().__init__(dmm, fe_type)


@intrinsic
def numpy_scalar(typingctx: Any, x: types.Type) -> Any:
    """``x``, boxed as the NumPy scalar of its dtype when the function returns it."""
    base = types.unliteral(x)  # (a constant result: its type, which numba casts it to)
    if not isinstance(base, (types.Integer, types.Float, types.Boolean, types.Complex)):
        return _passed(x)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return args[0]  # (a number: nothing to count references of)

    return NumPyScalar(base)(base), codegen


@box(NumPyScalar)
def _box_numpy_scalar(typ: NumPyScalar, val: Any, c: Any) -> Any:
    data = c.context.data_model_manager[typ.base].as_data(c.builder, val)  # (bool: one byte)
    slot = cgutils.alloca_once_value(c.builder, data)
    descr = c.env_manager.read_const(c.env_manager.add_const(typ.dtype))
    fnty = ir.FunctionType(c.pyapi.pyobj, [c.pyapi.voidptr, c.pyapi.pyobj, c.pyapi.pyobj])
    maker = cgutils.get_or_insert_function(c.builder.module, fnty, _SCALAR_SYMBOL)
    return c.builder.call(maker, [c.builder.bitcast(slot, c.pyapi.voidptr), descr,
                                  cgutils.get_null_value(c.pyapi.pyobj)])


# -- the returned-array marker ----------------------------------------------------------
class ReturnedArray(types.Array):
    """An array that boxes with the ``ndarray`` class from the environment (no unpickle)."""

    def __init__(self, array: types.Array) -> None:
        super().__init__(array.dtype, array.ndim, array.layout, readonly=not array.mutable,
                         name=f"returned {array.name}", aligned=array.aligned)


register_model(ReturnedArray)(models.ArrayModel)


@intrinsic
def returned_array(typingctx: Any, a: types.Type) -> Any:
    """``a``, boxed with the ``ndarray`` class of the environment when returned."""
    if type(a) is not types.Array or a.box_type is not np.ndarray:
        return _passed(a)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        # the result is a new reference, the argument a borrowed one (numba's convention)
        context.nrt.incref(builder, sig.args[0], args[0])
        return args[0]

    return ReturnedArray(a)(a), codegen


@box(ReturnedArray)
def _box_returned_array(typ: ReturnedArray, val: Any, c: Any) -> Any:
    # numba's ``box_array`` with the class as an environment constant: the NRT call gives the
    # array back as the argument it came from when it is one, else a new array on its buffer
    dtype = c.env_manager.read_const(c.env_manager.add_const(numpy_support.as_dtype(typ.dtype)))
    cls = c.env_manager.read_const(c.env_manager.add_const(np.ndarray))
    i32 = ir.IntType(32)
    fnty = ir.FunctionType(c.pyapi.pyobj, [c.pyapi.voidptr, c.pyapi.pyobj, i32, i32,
                                           c.pyapi.pyobj])
    adapt = cgutils.get_or_insert_function(c.builder.module, fnty,
                                           "NRT_adapt_ndarray_to_python_acqref")
    slot = cgutils.alloca_once_value(c.builder, val)
    boxed = c.builder.call(adapt, [c.builder.bitcast(slot, c.pyapi.voidptr), cls,
                                   ir.Constant(i32, typ.ndim), ir.Constant(i32, int(typ.mutable)),
                                   dtype])
    c.context.nrt.decref(c.builder, typ, val)  # (the boxed array took the reference)
    return boxed


def _passed(x: types.Type) -> Any:
    """The identity on ``x``, for the values a marker leaves to numba's own box."""
    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        context.nrt.incref(builder, x, args[0])
        return args[0]

    return x(x), codegen
