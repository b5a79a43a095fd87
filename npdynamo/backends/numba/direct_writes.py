"""Kernels that compute straight into an array they read (``direct_writes``): the per-graph
program's inputs written back (``program``), and a loop body's carried arrays (``loop_writer``:
``v = v - r * q`` updates the loop's own vector instead of allocating one per iteration).
"""

from __future__ import annotations

from npdynamo.backends.inplace import cannot_raise, may_alias
from npdynamo.backends.numba.fusion import FusionGroup, Partition
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.symbolic_code import same_shape


def graph_outputs(graph: Graph) -> tuple:
    """The graph's output values as a tuple (a single output is a 1-tuple)."""
    out = graph.output_node.args[0] if graph.output_node.args else ()
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def direct_writes(graph: Graph, partition: Partition, owned: bool = False) -> dict[Node, Node]:
    """Kernel outputs that may be computed straight into an input array: output -> input.

    Capture marks the outputs that are only copied back into an input (``meta["write_back"]``
    of the output node: position -> placeholder name). Computing one into the input itself
    saves an allocation and a copy per call, and is exact when:

    * nothing after its kernel can raise once an input is written (a raise reruns the frame in
      Python, which must find the inputs untouched): later steps are kernels (a kernel fails
      only while compiling, before it writes anything; a later kernel that fails is recomputed
      by NumPy, below) or NumPy calls that cannot raise on a call where no ufunc can
      (``inplace.cannot_raise``: a training step's matmuls, transposes and sums). With such
      NumPy calls after it, the program writes the input directly only on calls where
      ``ufuncs_cannot_raise()`` holds (``needs_calm_state``), else into a copy;
    * the kernel is elementwise (no reduction phases) and reads the input at the shape of the
      output: each element is read at the index it is written, in the same loop iteration,
      before the iteration stores it (``codegen``). Everything else that reads the input, or
      a value that may share its memory (a transpose of it), comes before the kernel, and no
      other output shares its memory;
    * the output is that one output position, and the input receives only this output.

    The kernel stores such an output through the input's own parameter (``generate_kernel``'s
    ``into``); the program passes the input, or a copy when it may not be written.

    ``owned``: the inputs are a loop body's carried arrays that its loop owns (copies made
    before the first iteration, or arrays nothing else holds: ``loop_control``), never the
    caller's: a raise after the write leaves the caller's arrays untouched, so the first
    condition does not apply.
    """
    out = graph_outputs(graph)
    targets = graph.output_node.meta.get("write_back") or {}
    if not targets:
        return {}
    steps = partition.steps
    step_of: dict[Node, int] = {}
    for i, step in enumerate(steps):
        for node in (step.nodes if isinstance(step, FusionGroup) else [step]):
            step_of[node] = i
    # the first step from which no NumPy call can raise on a calm call
    safe_from = 0 if owned else len(steps)
    while safe_from and (isinstance(steps[safe_from - 1], FusionGroup)
                         or cannot_raise(steps[safe_from - 1])):
        safe_from -= 1
    aliases = may_alias(graph)
    placeholders = {p.name: p for p in graph.placeholders}
    chosen: dict[Node, Node] = {}
    for position, name in targets.items():
        holder = placeholders.get(name)
        node = out[position] if position < len(out) else None
        at = step_of.get(node) if isinstance(node, Node) else None
        group = steps[at] if at is not None else None
        if (holder is None or not isinstance(group, FusionGroup) or group.reduce_axes
                or at < safe_from or node not in group.outputs):
            continue
        want, have = node.meta.get("val"), holder.meta.get("val")
        if (out.count(node) != 1 or holder in chosen.values()
                or not isinstance(want, ArrayMeta) or not isinstance(have, ArrayMeta)
                or want.dtype != have.dtype or not same_shape(want.shape, have.shape)
                or any(step_of.get(user, len(steps)) > at for user in holder.users
                       if user not in group.nodes)
                or any(holder in aliases.get(v, ()) for v in out
                       if isinstance(v, Node) and v is not node)
                or any(holder in aliases.get(v, ()) and v is not holder
                       for step in steps[at:] for v in step_inputs(step))):
            continue
        chosen[node] = holder
    return chosen


def needs_calm_state(partition: Partition) -> set[int]:
    """The kernels (group indices) followed by a NumPy call: they write an input directly only
    on calls where no ufunc can raise."""
    indices: set[int] = set()
    numpy_after = False
    for step in reversed(partition.steps):
        if isinstance(step, FusionGroup):
            if numpy_after:
                indices.add(step.index)
        else:
            numpy_after = True
    return indices


def step_inputs(step: FusionGroup | Node) -> list[Node]:
    """The values a step of a partition reads."""
    return list(step.inputs) if isinstance(step, FusionGroup) else step.all_input_nodes
