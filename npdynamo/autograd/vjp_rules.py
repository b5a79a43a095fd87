"""Attaches a VJP rule to every differentiable op of ``ops.REGISTRY`` (``op.vjp``).

A rule is ``vjp(emit, g, out, *args, **kwargs) -> tuple``: given the cotangent ``g`` of the
op's result ``out`` and the op's canonical arguments, it returns one cotangent per positional
argument (a tuple of them for a sequence argument such as ``concatenate``'s arrays; None for an
argument that gets no gradient). It computes only through ``emit(op, *args, **kwargs)``, so the
tape runs it on arrays and reverse mode runs it on graph nodes. Importing this module installs
the rules (each ``vjp_*`` module registers its own with ``vjp_registry.vjp``);
``missing_rules()`` lists differentiable ops left without one.
"""

from __future__ import annotations

from npdynamo.autograd import (  # noqa: F401  (each registers its rules with @vjp)
    vjp_arrays,
    vjp_decompositions,
    vjp_elementwise,
    vjp_layout,
    vjp_linalg,
    vjp_reductions,
    vjp_solvers,
)
from npdynamo.autograd.backward_ops import BACKWARD_OPS
from npdynamo.autograd.vjp_registry import RULES
from npdynamo.ops import REGISTRY


def install() -> None:
    """Set ``op.vjp`` on every op (registered or backward-only) that has a rule (idempotent)."""
    for name, rule in RULES.items():
        op = REGISTRY.get(name) or BACKWARD_OPS.get(name)
        if op is not None:
            op.vjp = rule


def missing_rules() -> list[str]:
    """Names of differentiable ops (registered or backward-only) without a VJP rule."""
    ops = {**REGISTRY, **BACKWARD_OPS}
    return sorted(n for n, op in ops.items() if op.differentiable and op.vjp is None)


install()
