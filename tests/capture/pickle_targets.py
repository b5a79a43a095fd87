"""Compiled functions at module level, for the pickle tests (pickle finds them by reference)."""

import numpy as np

import npdynamo


@npdynamo.compile
def decorated(x, scale=2.0):
    return np.sin(x) * scale + 1.0


def plain(x, scale=2.0):
    return np.sin(x) * scale + 1.0


assigned = npdynamo.compile(plain)
assigned_numba = npdynamo.compile(plain, backend="numba", fullgraph=True, dynamic=False)


class Model:
    def __init__(self, weight):
        self.weight = weight

    @npdynamo.compile
    def forward(self, x):
        return np.tanh(x * self.weight)
