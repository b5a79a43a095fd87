"""Control flow captured whole: sub-captures into subgraphs, and loops and branches formed from
ordinary Python.

- ``subcapture``: the declared state of a sub-capture (``CaptureContext.subcapture``): the
  subgraph ops go into, and the outer values lifted into it.
- ``higher_order``: ``npdynamo.cond``/``while_loop``/``fori_loop`` under capture, each function
  a sub-capture into its own subgraph, with the outer values it reads lifted to inputs.
- ``if_statements``: ``if <array test>:`` captured as one ``cond`` node (opt-in).
- ``for_loops``: ``for i in range(a, b)`` captured as one ``fori_loop`` node.
- ``while_loops``: ``while <array condition>:`` captured as one ``while_loop`` node.
- ``unrolled_loops``: what a loop unrolled at capture may cost; a long one breaks at its head.
- ``errstate_blocks``: ``with np.errstate(...):`` blocks captured into the graph.
- ``assertions``: ``assert <test of graph data>`` checked in the graph, its passing side followed.

Above the evaluator (calls, ops, values, the translator) whose sub-captures it runs; below the
opcode handlers that hand a ``for``/``while``/``if``/``with`` to it.
"""
