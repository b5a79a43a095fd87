"""The opcode handlers: the modules of this package register them into ``registry.HANDLERS``."""

from npdynamo.capture.opcodes import (  # noqa: F401
    building,
    control,
    imports,
    layout,
    operators,
    stack,
    subscripts,
    yields,
)
from npdynamo.capture.opcodes.operators import binary_op

__all__ = ["binary_op"]
