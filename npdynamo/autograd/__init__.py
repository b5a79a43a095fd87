"""Autograd: reverse-mode gradients of NumPy programs, as a tape or as graphs.

``grad``/``value_and_grad`` run a function on tracers and replay its tape backwards (the
dynamic graph). ``reverse_mode`` differentiates captured fx nodes into more fx nodes,
``build_joint`` + ``partition`` turn a forward graph into a joint forward/backward graph and
split it with a min-cut (the static graph), and the ``aot_*`` backends run those graphs as one
differentiable step of an enclosing tape. All of them use the VJP rules of ``vjp_rules``.
"""

from npdynamo.autograd import (
    vjp_higher_order,  # noqa: F401  (registers the control-flow step)
    vjp_rules,  # noqa: F401  (installs op.vjp on the registry)
)
from npdynamo.autograd.aot import AOTFunction, aot_backend, aot_eager, aot_numba
from npdynamo.autograd.api import GradSpec, grad, grad_spec, value_and_grad
from npdynamo.autograd.joint import JointGraph, build_joint
from npdynamo.autograd.partition import Partition, SavedValue, partition
from npdynamo.autograd.pytree import tree_flatten, tree_map, tree_unflatten
from npdynamo.autograd.reverse_mode import graph_emitter, reverse_mode
from npdynamo.autograd.tracer import Tracer, is_tracer, tracer_value

__all__ = [
    "AOTFunction",
    "GradSpec",
    "JointGraph",
    "Partition",
    "SavedValue",
    "Tracer",
    "aot_backend",
    "aot_eager",
    "aot_numba",
    "build_joint",
    "grad",
    "grad_spec",
    "graph_emitter",
    "partition",
    "reverse_mode",
    "is_tracer",
    "tracer_value",
    "tree_flatten",
    "tree_map",
    "tree_unflatten",
    "value_and_grad",
]
