"""Graph passes run between capture and the backends: DCE, CSE, shape/dtype propagation."""

from npdynamo.fx.passes.cse import common_subexpression_elimination
from npdynamo.fx.passes.dce import dead_code_elimination
from npdynamo.fx.passes.shape_prop import propagate_shapes

__all__ = ["common_subexpression_elimination", "dead_code_elimination", "propagate_shapes"]

# Rewrites used before code generation (the numba backend runs them on its copy of a graph).
from npdynamo.fx.passes.constant_fold import constant_fold  # noqa: E402
from npdynamo.fx.passes.simplify import simplify  # noqa: E402

__all__ += ["constant_fold", "simplify"]

# The pipelines of the stages (which of these run when), written once.
from npdynamo.fx.passes.pipeline import PIPELINES, run_pipeline  # noqa: E402

__all__ += ["PIPELINES", "run_pipeline"]
