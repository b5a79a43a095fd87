"""The canonical op: one graph-level operation with its NumPy implementation and its meta rule.

Graph nodes call ``Op`` objects, never raw NumPy callables. Each op module (``elementwise``,
``reductions``, ``linalg``, ``shape_ops``, ``indexing``, ``creation``) builds its ops with
``Op(...)`` and files them in ``REGISTRY`` through ``register``; ``normalize`` maps user-level
NumPy calls onto them, and later stages (fx passes, autograd, backends) read their attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.unsupported import UnsupportedArguments  # noqa: F401  (re-exported)

KINDS = ("elementwise", "reduction", "opaque")
#: ``Op.cost``: ``free`` makes a view or a new shape (no pass over the data), ``pass`` reads and
#: writes each element once, ``expensive`` computes a transcendental function per element (worth
#: keeping in a buffer rather than recomputing), ``blas`` calls BLAS (``2 m k n`` flops).
COSTS = ("free", "pass", "expensive", "blas")
#: ``Op.nonnegative``: ``always`` >= +0.0 or nan for any operands; ``operands`` when every
#: operand is (never -0.0 or negative in either case).
NONNEGATIVE = (None, "always", "operands")


class _Required:
    def __repr__(self) -> str:
        return "<required>"


#: Marks a static keyword without a default in ``Op.defaults``: canonical kwargs always hold it.
REQUIRED: Any = _Required()


class Op:
    """A canonical operation of the graph.

    ``impl`` takes the canonical args/kwargs (array operands first, static parameters as
    keywords) and returns exactly what NumPy returns. ``rule`` takes the same arguments with
    every array operand replaced by its ``ArrayMeta`` and returns the result's meta, raising the
    exception type NumPy would raise. ``defaults`` lists the static keywords the op accepts, in
    signature order, with their defaults; canonical kwargs only hold values that differ from
    them. ``vjp`` is filled in by the autograd stage. ``source``, when an op sets it, spells a
    call as generated Python code: ``source(args, kwargs, expr)`` with ``expr`` rendering one
    argument, giving the text or None for the plain ``impl`` call.

    Its traits, declared where it is defined, tell passes and backends what it does without
    their knowing its name:

    - ``view``: the result may share memory with the first operand (NumPy returns a view);
    - ``allocates``: the result is always a new array of its own (never an operand's memory);
    - ``cost`` (one of ``COSTS``), and ``blas`` (``cost == "blas"``);
    - ``recomputable``: cheap enough for a backward to redo rather than save (default: the
      elementwise ops);
    - ``quiet``: a reduction whose only errors on an array of known rank are floating-point ones;
    - ``nonnegative`` (one of ``NONNEGATIVE``): when its results are >= +0.0 or nan;
    - ``shape_only``: its array operands only lend a shape and dtype (``zeros_like``);
    - ``draws``: draws from a random generator (implies ``impure``);
    - ``checks``: raises when the data breaks an assumption capture made (a speculated
      ``assert``), its only effect: kept though nothing reads its result, never merged or
      folded (``Node.is_impure``), yet free to run twice (unlike ``impure``);
    - ``subgraph_inputs``: an op with subgraphs (``cond``, loops): ``(subgraph, input metas)``
      pairs from its arguments, for passes that descend;
    - ``loop``: a loop op's ``(position of its body among the arguments, body inputs before
      the carried values)``;
    - ``differentiable``: ``npdynamo.grad`` may differentiate through it (a VJP rule exists).
    """

    def __init__(
        self,
        name: str,
        impl: Callable[..., Any],
        rule: Callable[..., ArrayMeta | tuple[ArrayMeta, ...]],
        *,
        kind: str = "opaque",
        differentiable: bool = True,
        impure: bool = False,
        defaults: Mapping[str, Any] | None = None,
        view: bool = False,
        allocates: bool = False,
        cost: str = "pass",
        recomputable: bool | None = None,
        quiet: bool = False,
        nonnegative: str | None = None,
        shape_only: bool = False,
        draws: bool = False,
        checks: bool = False,
        subgraph_inputs: Callable[..., list] | None = None,
        loop: tuple[int, int] | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"op {name!r}: kind must be one of {KINDS}, not {kind!r}")
        if cost not in COSTS:
            raise ValueError(f"op {name!r}: cost must be one of {COSTS}, not {cost!r}")
        if nonnegative not in NONNEGATIVE:
            raise ValueError(f"op {name!r}: nonnegative must be one of {NONNEGATIVE}")
        self.name = name
        self.impl = impl
        self.rule = rule
        self.kind = kind
        self.differentiable = differentiable
        self.impure = impure or draws
        self.view = view
        self.allocates = allocates
        self.cost = cost
        self.recomputable = kind == "elementwise" if recomputable is None else recomputable
        self.quiet = quiet
        self.nonnegative = nonnegative
        self.shape_only = shape_only
        self.draws = draws
        self.checks = checks
        self.subgraph_inputs = subgraph_inputs
        self.loop = loop
        self.defaults: dict[str, Any] = dict(defaults or {})
        self.vjp: Callable[..., Any] | None = None
        self.source: Callable[[tuple, dict, Callable[[Any], str]], str | None] | None = None

    @property
    def blas(self) -> bool:
        """Whether it calls BLAS (multi-threaded under NumPy)."""
        return self.cost == "blas"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.impl(*args, **kwargs)

    def infer(self, *args: Any, **kwargs: Any) -> ArrayMeta | tuple[ArrayMeta, ...]:
        """The result's meta from the operands' metas; computes no values."""
        return self.rule(*args, **kwargs)

    def result_type(self, kwargs: Mapping[str, Any]) -> type:
        """The class an op with several results returns them in: a plain tuple (``np.divmod``,
        ``np.frexp``) unless the op sets its own (``np.linalg.svd``'s named tuple)."""
        return tuple

    def __repr__(self) -> str:
        return f"ops.{self.name}"

    def __reduce__(self) -> tuple[Callable[[str], Op], tuple[str]]:
        # Ops are singletons: pickling (e.g. a cached graph) refers to them by name.
        return (lookup, (self.name,))


REGISTRY: dict[str, Op] = {}


def register(op: Op) -> Op:
    """File ``op`` under its name; a second op with the same name is a programming error."""
    if op.name in REGISTRY:
        raise ValueError(f"an op named {op.name!r} is already registered")
    REGISTRY[op.name] = op
    return op


def lookup(name: str) -> Op:
    """The registered op called ``name``."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"no op named {name!r}; known ops: {sorted(REGISTRY)}") from None
