"""The opcode-handler table (``HANDLERS``), filled by the modules of this package."""

from npdynamo.capture.opcodes import (  # noqa: F401
    building,
    control,
    layout,
    operators,
    stack,
    yields,
)
from npdynamo.capture.opcodes.operators import binary_op
from npdynamo.capture.opcodes.table import HANDLERS, handler

__all__ = ["HANDLERS", "binary_op", "handler"]
