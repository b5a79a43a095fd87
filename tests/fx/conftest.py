"""Stand-in targets for the fx tests: small op objects shaped like ``npdynamo.ops`` ops."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo.ops.meta import ArrayMeta


class StandInOp:
    """An op with ``name``, ``impl``, ``infer`` and ``impure``, like the canonical ops."""

    def __init__(self, name, impl, infer=None, impure=False):
        self.name = name
        self.impl = impl
        self.impure = impure
        self.calls = 0
        if infer is not None:
            self.infer = infer

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.impl(*args, **kwargs)


def _broadcast_infer(*args):
    metas = [a for a in args if isinstance(a, ArrayMeta)]
    shape = np.broadcast_shapes(*(m.shape for m in metas))
    dtype = np.result_type(*(a.dtype if isinstance(a, ArrayMeta) else a for a in args))
    return ArrayMeta(shape, dtype)


@pytest.fixture
def ops():
    """Fresh stand-in ops (fresh so that call counters start at zero)."""
    return {
        "add": StandInOp("add", np.add, _broadcast_infer),
        "mul": StandInOp("multiply", np.multiply, _broadcast_infer),
        "neg": StandInOp("negative", np.negative, _broadcast_infer),
        "tanh": StandInOp("tanh", np.tanh, _broadcast_infer),
        "log": StandInOp("log_effect", lambda x: x, _broadcast_infer, impure=True),
    }
