"""Kernel code generation: one fusion group becomes the readable source of one ``@njit`` kernel.

A kernel takes the group's inputs and NumPy-allocated output buffers (allocating inside numba
page-faults on large arrays) and writes every output; a kernel whose outputs are all scalars,
written for a loop program (``returns``), returns them instead, so the loop keeps them in
registers. Its loops: an outer loop over the kept
(row) axes, ``prange`` when the group runs in parallel; inside, one *phase* per step of
reductions: an inner loop over the reduced axes that computes the element values it needs,
folds them into the reductions of that phase and stores the outputs that became computable.
Values needed again in a later phase are recomputed (arithmetic is cheaper than memory), except
transcendentals, which are kept in an output buffer of the same shape when one is free (the way a
hand-written softmax reuses its output for the exponentials). A pure elementwise group is a row
kernel without reductions. A reduction over every axis is chunked over the first axis
(``prange`` over chunks, then the chunk results folded in order), so its result does not depend
on the number of threads.

A division by a constant, or of a row's elements by a value of the row (a softmax's sum, a
layernorm's deviation), multiplies by the reciprocal (a parameter, or computed once per row) when
that reciprocal is a normal number (the product is then within one rounding of the quotient); a
row whose divisor is 0, subnormal, huge, inf or NaN divides, so its quotients are NumPy's.

The five rules of ``notes/perf-baseline.md`` hold by construction: ``error_model='numpy'``;
no fast-math flags on the kernel itself, only ``reassoc`` on the accumulation helpers
(``runtime.radd``) so reductions vectorise; vectorisable exp/tanh (``approx``); outputs
allocated by NumPy; ``parallel`` decided per graph by ``threads``.

Float reductions: sums and products fold blocks of ``BLOCK`` elements (vectorised, in any
order; no block loop when they reduce fewer), then add the block results in order, in float64
for float32 data. The result differs
from NumPy's pairwise sum only by rounding: within ``rtol`` times the sum of absolute values
(rtol 1e-5 float32, 1e-12 float64). max/min propagate NaN; integer and boolean reductions are
exact. Sign of zero: ``max``/``min`` of equal zeros may pick the other zero than NumPy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from npdynamo.backends.numba.folds import fold, fold_start
from npdynamo.backends.numba.fusion import FusionGroup, IndexMap, broadcast_map
from npdynamo.backends.numba.lowering import Lowered, Operand
from npdynamo.backends.numba.phases import BLOCK, Phase, PhasePlan, array_meta
from npdynamo.backends.numba.runtime import has_wide_vectors
from npdynamo.backends.numba.ufunc_table import cast, dtype_ctor, literal
from npdynamo.fx.node import Node
from npdynamo.fx.sizes import unbacked_origins
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbolic import SymInt
from npdynamo.ops.symbolic_code import is_one

#: Elements per parallel chunk of a reduction over all axes.
CHUNK = 16384

_HEADER = '''"""npdynamo numba kernel (generated; do not edit): {summary}."""
import numpy as np
from numba import njit, prange

from npdynamo.backends.numba.approx import exp_f32, exp_f64, log_f32, log_f64, tanh_f32, tanh_f64
from npdynamo.backends.numba.runtime import (
    complex_abs_c64, complex_abs_c128, complex_abs_compare_c64, complex_abs_compare_c128,
    complex_divide_c64, complex_divide_c128, complex_multiply_c64, complex_multiply_c128,
    floor_divide_f32, floor_divide_f64, fmaximum, fminimum, prefer_wide_vectors, radd,
    remainder_f32, remainder_f64, rmul, wrapping_add, wrapping_mul, wrapping_sub)

'''


@dataclass
class KernelArg:
    """One parameter of a kernel and what the caller passes for it."""

    name: str
    kind: str  # "input" (a graph value), "const" (an array or float), "size", "output", "extent"
    value: object  # the Node, the constant, the size expression, or the extent's size


@dataclass
class KernelSource:
    """The generated module source of one group's kernel and how to call it."""

    group: FusionGroup
    source: str
    args: list[KernelArg]
    parallel: bool
    fn_name: str = "kernel"
    #: outputs the kernel stores into the input array it reads (output -> that input's node)
    into: dict[Node, Node] = field(default_factory=dict)
    #: a kernel of scalar results (``generate_kernel(returns=True)``): the outputs it returns,
    #: in the order of its return tuple (it has no output parameters then)
    returns: tuple[Node, ...] = ()

    def unbacked(self) -> dict[str, tuple[Node, int, int]]:
        """The unbacked sizes (``ops.unbacked``) a call computes with (its extents, its
        outputs' shapes, its group's size), each with the input array and dimension to read
        it from (``fx.sizes.unbacked_origins``)."""
        sizes: list = [self.group.size]
        sizes += [arg.value for arg in self.args if arg.kind in ("extent", "size")]
        for arg in self.args:
            if arg.kind == "output":
                meta = arg.value.meta["val"]
                sizes += [*meta.shape, meta.nbytes]
        return unbacked_origins(sizes, [arg.value for arg in self.args if arg.kind == "input"])


def _index(idx_map: IndexMap) -> str:
    if not idx_map:
        return "()"
    return ", ".join("0" if k is None else f"i{k}" for k in idx_map)


def _range(lo: str, hi: str) -> str:
    """A loop range whose index LLVM knows is not negative.

    numba wraps negative indices around, which keeps LLVM from vectorising an access with an
    index it cannot prove non-negative (a loop not starting at 0): unsigned indices have no
    wraparound check.
    """
    return f"range({hi})" if lo == "0" else f"range(np.uint64({lo}), np.uint64({hi}))"


#: Innermost axes of at most this static size get a literal trip count (``_assemble``).
SMALL_EXTENT = 4


class _KernelWriter:
    def __init__(self, group: FusionGroup, parallel: bool, into: dict[Node, Node],
                 returns: bool = False) -> None:
        self.g = group
        self.parallel = parallel
        self.into = into
        self.returns = returns
        d = group.domain
        self.ndim = len(d)
        self.loop_axes = group.reduce_axes or ((self.ndim - 1,) if self.ndim else ())
        self.outer_axes = tuple(k for k in range(self.ndim) if k not in self.loop_axes)
        self.plan = PhasePlan(group, self.loop_axes)
        self.members = set(group.nodes)
        self.by_reciprocal: dict[Node, str] = {}  # divisions emitted as products, while set
        self.outputs = set(group.outputs)
        self.args: list[KernelArg] = []
        self.param: dict[int, str] = {}  # id(input node or constant) -> parameter name
        self.extent_src: dict[int, str] = {}
        self.preamble: dict[str, str] = {}  # reads of 0-d inputs, before the loops
        self.lines: list[str] = []
        # Names local to the kernel (position in the group, not the graph's node names), so
        # structurally identical groups (a loop body unrolled N times) give the same source:
        # one module, one numba compile, reused by all of them.
        self.local = {node: i for i, node in enumerate(group.nodes)}

    def v(self, node: Node) -> str:
        return f"v{self.local[node]}"

    # -- parameters and element reads --------------------------------------------------------

    def _param(self, value: object, kind: str) -> str:
        if kind == "output" and value in self.into:
            # stored through the input's own parameter: LLVM then sees each element loaded
            # and stored at one address and vectorises; through a second parameter holding the
            # same memory its runtime overlap check fails and the loop runs scalar
            return self._param(self.into[value], "input")
        key = id(value)
        if key not in self.param:
            if kind == "const":
                name = f"c{sum(a.kind == 'const' for a in self.args)}"
            elif kind == "size":
                name = f"z{sum(a.kind == 'size' for a in self.args)}"
            else:
                prefix = "in" if kind == "input" else "out"
                name = f"{prefix}{sum(a.kind == kind for a in self.args)}"
            self.param[key] = name
            self.args.append(KernelArg(name, kind, value))
        return self.param[key]

    def _read(self, operand: Operand, reader_shape: tuple[int, ...], reader_map: IndexMap) -> str:
        value = operand.value
        if isinstance(value, Node) and value in self.members:
            expr, src = self.v(value), self.g.lowered[value].dtype
        elif isinstance(value, SymInt):
            # a symbolic size used as a number: the program passes its value (an int)
            expr, src = self._param(value, "size"), np.dtype(np.int64)
        elif isinstance(value, Node) and isinstance(value.meta.get("val"), ScalarMeta):
            # a dynamic Python float: numba receives it as a float64 scalar, converted to the
            # loop's dtype as NumPy converts a weak scalar
            expr, src = self._param(value, "input"), np.dtype(np.float64)
        elif isinstance(value, (Node, np.ndarray)):
            kind = "input" if isinstance(value, Node) else "const"
            meta = array_meta(value) if kind == "input" else ArrayMeta(value.shape, value.dtype)
            name = self._param(value, kind)
            idx = broadcast_map(meta.shape, reader_shape, reader_map)
            for t, k in enumerate(idx):
                if k is not None:
                    self.extent_src.setdefault(k, f"{name}.shape[{t}]")
            if meta.scalar:
                expr = name
            elif not meta.shape:
                # a 0-d array read once before the loops: inside a prange body numba's parfor
                # lowering passes it as a scalar, which has no [()]
                expr = f"{name}_0d"
                self.preamble.setdefault(expr, f"    {expr} = {name}[()]")
            else:
                expr = f"{name}[{_index(idx)}]"
            src = meta.dtype
        else:
            return self._constant(value, operand.dtype)
        return cast(expr, src, operand.dtype)

    def _constant(self, value: object, dtype: np.dtype) -> str:
        """A scalar constant operand. A float one is a parameter (a NumPy scalar of ``dtype``,
        its literal's bits), so kernels that differ only in such constants (a body unrolled
        with another coefficient per step) have one source: one module, one numba compile.
        Ints and bools stay literals, which LLVM folds (an int division becomes a product)."""
        if dtype.kind != "f":
            return literal(value, dtype)
        # a parameter per use, even of one value twice: sharing one would make the source
        # depend on which constants happen to be equal
        return self._param(np.array(value).astype(dtype)[()], "const")

    # -- emission ----------------------------------------------------------------------------

    def emit(self, line: str, depth: int) -> None:
        self.lines.append("    " * depth + line)

    def _value(self, node: Node, depth: int, phase: int | None) -> None:
        low = self.g.lowered[node]
        if phase is not None and self.plan.buffered_before(node, phase):
            host = self.plan.spill_host.get(node, node)
            buf = self._param(host, "output")
            self.emit(f"{self.v(node)} = {buf}[{_index(self.g.maps[node])}]", depth)
            return
        shape = array_meta(node).shape
        reciprocal = _constant_reciprocal(node, low)
        # (the divisor of a constant reciprocal is not read: it would be a parameter unused)
        operands = low.operands[:1] if reciprocal is not None else low.operands
        exprs = [self._read(o, shape, self.g.maps[node]) for o in operands]
        if isinstance(low, Lowered) and low.indexed:
            exprs += ["np.int64(0)" if k is None else f"np.int64(i{k})"
                      for k in self.g.maps[node][-low.indexed:]]
        if node in self.by_reciprocal:
            self.emit(f"{self.v(node)} = ({exprs[0]} * {self.by_reciprocal[node]})", depth)
            return
        if reciprocal is not None:
            self.emit(f"{self.v(node)} = ({exprs[0]} * {self._constant(reciprocal, low.dtype)})",
                      depth)
            return
        self.emit(f"{self.v(node)} = {low.emit(exprs)}", depth)

    def _row_divisions(self, ph: Phase) -> dict[Node, Node]:
        """Float divisions in ``ph``'s inner loop by a value of the row (computed outside the
        loop: a softmax's sum, a layernorm's deviation): division -> divisor."""
        found = {}
        for node in self.plan.needed(ph.roots, ph.index):
            low = self.g.lowered[node]
            if (getattr(node.target, "name", None) == "divide" and isinstance(low, Lowered)
                    and low.dtype.kind == "f" and not self.plan.buffered_before(node, ph.index)):
                divisor = low.operands[1].value
                if (isinstance(divisor, Node) and divisor in self.members
                        and not self.plan.in_loop(divisor)
                        and self.g.lowered[divisor].dtype == low.dtype):
                    found[node] = divisor
        return found

    def _loops_by_reciprocal(self, ph: Phase, depth: int, acc_of: dict,
                             divisions: dict[Node, Node]) -> None:
        """The phase's loops twice: multiplying by each row divisor's reciprocal, computed once
        per row (a division costs ten multiplications), when every reciprocal is a normal
        number; dividing otherwise (a divisor near 0, inf or NaN: 1/d would overflow or lose
        its precision). The product is within one rounding of the quotient."""
        dtype = next(iter(divisions)).meta["val"].dtype
        low, high = (2.0**-125, 2.0**125) if dtype.itemsize <= 4 else (2.0**-1021, 2.0**1021)
        names, tests = {}, []
        for divisor in dict.fromkeys(divisions.values()):
            name = f"r{self.local[divisor]}"
            names[divisor] = name
            self.emit(f"{name} = {literal(1.0, dtype)} / {self.v(divisor)}", depth)
            tests.append(f"{literal(low, dtype)} <= abs({self.v(divisor)}) <= "
                         f"{literal(high, dtype)}")
        self.emit(f"if {' and '.join(tests)}:", depth)
        self.by_reciprocal = {node: names[d] for node, d in divisions.items()}
        self._loops(ph, depth + 1, acc_of, None)
        self.by_reciprocal = {}
        self.emit("else:", depth)
        self._loops(ph, depth + 1, acc_of, None)

    def _outer_values(self, level: int, depth: int) -> None:
        nodes = [n for n in self.g.nodes
                 if not self.plan.in_loop(n) and isinstance(self.g.lowered[n], Lowered)
                 and self.plan.avail[n] == level]
        sunk = self._sunk(nodes)
        inside = {n for branch in sunk.values() for n in branch}
        for node in nodes:
            if node in sunk:
                self._branch(node, sunk[node], depth)
            elif node not in inside:
                self._value(node, depth, None)

    def _sunk(self, nodes: list[Node]) -> dict[Node, list[Node]]:
        """``where`` nodes among ``nodes`` (values computed once per row, outside the inner
        loops) -> the values only their chosen branch needs, in program order: computed in
        an ``if`` on the condition, so a masked-out row skips them (a Lennard-Jones energy's
        divisions below the diagonal). Rows are not vectorised (an inner loop runs per row),
        so the branch costs no vector lanes."""
        kept = self.outputs | set(self.plan.spill_host) | set(self.plan.spill_host.values())
        sunk: dict[Node, list[Node]] = {}
        for where in nodes:
            low = self.g.lowered[where]
            if getattr(where.target, "name", None) != "where" or low.indexed:
                continue
            chosen = low.operands[1].value
            branch: set[Node] = set()
            for node in reversed(nodes[:nodes.index(where)]):
                if node in kept or any(node in b for b in sunk.values()):
                    continue
                users = [u for u in node.users if u in self.members]
                only_chosen = node is chosen and all(
                    o.value is not node for i, o in enumerate(low.operands) if i != 1)
                if users and all(u in branch or (u is where and only_chosen) for u in users):
                    branch.add(node)
            if branch:
                sunk[where] = [n for n in nodes if n in branch]
        # a where inside another's branch is computed plainly there
        inside = {n for branch in sunk.values() for n in branch}
        return {w: b for w, b in sunk.items() if w not in inside}

    def _branch(self, where: Node, branch: list[Node], depth: int) -> None:
        low = self.g.lowered[where]
        shape = array_meta(where).shape
        cond, chosen, other = (self._read(o, shape, self.g.maps[where]) for o in low.operands)
        test = cast(cond, low.operands[0].dtype, np.dtype(bool))
        self.emit(f"if {test}:", depth)
        for node in branch:
            self._value(node, depth + 1, None)
        self.emit(f"{self.v(where)} = {chosen}", depth + 1)
        self.emit("else:", depth)
        self.emit(f"{self.v(where)} = {other}", depth + 1)

    def _store(self, node: Node, depth: int, into: Node | None = None) -> None:
        buf = self._param(into or node, "output")
        self.emit(f"{buf}[{_index(self.g.maps[node])}] = {self.v(node)}", depth)

    def _phase_body(self, ph: Phase, depth: int, acc_of: dict) -> None:
        needed = self.plan.needed(ph.roots, ph.index)
        for node in self.g.nodes:
            if node in needed:
                self._value(node, depth, ph.index)
        for acc in ph.accs:
            src = self._read(acc.red.source, self.g.domain, self._full_map())
            if acc.red.square:
                src = f"({src} * {src})"
            target = acc.part if acc.blocked else acc_of[acc.node]
            self.emit(f"{target} = {fold(acc.red.kind, acc.red.acc_dtype, target, src, True)}",
                      depth)
        for node in ph.spills:
            self._store(node, depth, self.plan.spill_host[node])
        for node in ph.stores:
            self._store(node, depth)

    def _full_map(self) -> IndexMap:
        return tuple(None if is_one(d) else k for k, d in enumerate(self.g.domain))

    def _loops(self, ph: Phase, depth: int, acc_of: dict, first_range: str | None,
               axes: tuple[int, ...] | None = None) -> None:
        """The loop nest of one phase over ``axes`` (default: all loop axes); ``first_range``
        bounds the first loop (``"lo|hi"``)."""
        axes = self.loop_axes if axes is None else axes
        blocked = [a for a in ph.accs if a.blocked]
        for pos, k in enumerate(axes):
            last = pos == len(axes) - 1
            lo, hi = ("0", f"n{k}")
            if pos == 0 and first_range is not None:
                lo, hi = first_range.split("|")
            if last and blocked:
                self.emit(f"for b{k} in range({lo}, {hi}, {BLOCK}):", depth)
                depth += 1
                for a in blocked:
                    self.emit(f"{a.part} = {fold_start(a.red.kind, a.red.acc_dtype)}", depth)
                self.emit(f"for i{k} in {_range(f'b{k}', f'min(b{k} + {BLOCK}, {hi})')}:",
                          depth)
                self._phase_body(ph, depth + 1, acc_of)
                for a in blocked:
                    total = acc_of[a.node]
                    part = cast(a.part, a.red.acc_dtype, a.total)
                    self.emit(f"{total} = {fold(a.red.kind, a.total, total, part, False)}",
                              depth)
                return
            self.emit(f"for i{k} in {_range(lo, hi)}:", depth)
            depth += 1
        self._phase_body(ph, depth, acc_of)

    def _finish_reductions(self, ph: Phase, depth: int, acc_of: dict) -> None:
        for acc in ph.accs:
            total, red = acc_of[acc.node], acc.red
            count = " * ".join(f"n{k}" for k in self.g.reduce_axes) or "1"
            if red.mean:
                total = f"({total} / {dtype_ctor(acc.total)}({count}))"
            elif red.root:
                total = f"np.sqrt({total})"
            elif red.kind == "sum" and acc.total.kind == "f":
                # NumPy's empty sum is +0.0
                total = f"({total} if {count} != 0 else {literal(0.0, acc.total)})"
            self.emit(f"{self.v(acc.node)} = {cast(total, acc.total, red.dtype)}", depth)

    def _phase(self, ph: Phase, depth: int) -> None:
        for a in ph.accs:
            a.name, a.part = f"acc{self.local[a.node]}", f"part{self.local[a.node]}"
        acc_of = {a.node: a.name for a in ph.accs}
        if not self.loop_axes:
            self._phase_body(ph, depth, acc_of)
        elif self.outer_axes or not self.parallel:
            for a in ph.accs:
                self.emit(f"{a.name} = {fold_start(a.red.kind, a.total)}", depth)
            divisions = self._row_divisions(ph) if self.outer_axes else {}
            if divisions:
                self._loops_by_reciprocal(ph, depth, acc_of, divisions)
            else:
                self._loops(ph, depth, acc_of, None)
        elif not ph.accs:
            k = self.loop_axes[0]
            self.emit(f"for i{k} in prange(n{k}):", depth)
            self._loops(ph, depth + 1, acc_of, None, self.loop_axes[1:])
        else:
            self._chunked(ph, depth, acc_of)
        self._finish_reductions(ph, depth, acc_of)
        self._outer_values(ph.index + 1, depth)

    def _chunked(self, ph: Phase, depth: int, acc_of: dict) -> None:
        """A reduction over every axis in parallel: per-chunk results, folded in order."""
        k0 = self.loop_axes[0]
        rest = " * ".join(f"n{k}" for k in self.loop_axes[1:]) or "1"
        self.emit(f"ch = max(1, {CHUNK} // max(1, {rest}))", depth)
        self.emit(f"nch = (n{k0} + ch - 1) // ch", depth)
        for a in ph.accs:
            self.emit(f"parts{self.local[a.node]} = np.empty(nch, {dtype_ctor(a.total)})", depth)
        self.emit("for c in prange(nch):", depth)
        inner = {a.node: f"c{a.name}" for a in ph.accs}
        for a in ph.accs:
            self.emit(f"{inner[a.node]} = {fold_start(a.red.kind, a.total)}", depth + 1)
        self._loops(ph, depth + 1, inner, f"c * ch|min(n{k0}, c * ch + ch)")
        for a in ph.accs:
            self.emit(f"parts{self.local[a.node]}[c] = {inner[a.node]}", depth + 1)
        for a in ph.accs:
            self.emit(f"{a.name} = {fold_start(a.red.kind, a.total)}", depth)
        self.emit("for c in range(nch):", depth)
        for a in ph.accs:
            folded = fold(a.red.kind, a.total, a.name, f"parts{self.local[a.node]}[c]", False)
            self.emit(f"{a.name} = {folded}", depth + 1)

    def _outer_loop(self, depth: int) -> int:
        axes = self.outer_axes
        if not axes:
            return depth
        if self.parallel and len(axes) > 1:
            total = " * ".join(f"n{k}" for k in axes)
            self.emit(f"for flat in prange({total}):", depth)
            depth += 1
            for pos, k in enumerate(axes):
                # numba's parfor conversion refuses a variable reassigned in the loop body
                inner = " * ".join(f"n{j}" for j in axes[pos + 1:])
                quotient = f"(flat // ({inner}))" if inner else "flat"
                self.emit(f"i{k} = {quotient} % n{k}" if pos else f"i{k} = {quotient}", depth)
            return depth
        for pos, k in enumerate(axes):
            loop = "prange" if pos == 0 and self.parallel else "range"
            self.emit(f"for i{k} in {loop}(n{k}):", depth)
            depth += 1
        return depth

    def write(self) -> KernelSource:
        if self.returns:
            return self._write_returning()
        for out in self.g.outputs:
            name = self._param(out, "output")
            for t, k in enumerate(self.g.maps[out]):
                if k is not None:
                    self.extent_src.setdefault(k, f"{name}.shape[{t}]")
        phases = self.plan.phases()
        depth = self._outer_loop(1)
        self._outer_values(0, depth)
        for ph in phases:
            self._phase(ph, depth)
        for out in self.g.outputs:
            if not self.plan.in_loop(out):
                self._store(out, depth)
        return self._assemble()

    def _write_returning(self) -> KernelSource:
        """The kernel of a group whose every output is a scalar or 0-d: it returns them (a
        tuple, in ``group.outputs`` order) where the other kernels store into 0-d buffers. An
        inlined caller then keeps them in registers (a loop's accumulator). Each is converted
        to its output's dtype, as storing it into a buffer of that dtype converted it."""
        if self.outer_axes or any(array_meta(out).shape for out in self.g.outputs):
            raise ValueError("a kernel returns scalar outputs only")
        phases = self.plan.phases()
        if self.plan.spill_host:
            raise ValueError("a kernel returning its outputs keeps no value in a buffer")
        self._outer_values(0, 1)
        for ph in phases:
            self._phase(ph, 1)
        values = []
        for out in self.g.outputs:
            dtype = array_meta(out).dtype
            # (numba's own type of the expression may be wider than the output's dtype, a
            # narrow int computed as int64: the conversion is the buffer store's)
            values.append(f"{dtype_ctor(dtype)}({self.v(out)})")
        self.lines.append(f"    return ({''.join(v + ', ' for v in values)})")
        source = self._assemble()
        if any(a.kind == "output" for a in source.args):
            raise ValueError("a kernel returning its outputs writes a buffer")
        source.returns = tuple(self.g.outputs)
        return source

    def _assemble(self) -> KernelSource:
        extents = []
        for k, d in enumerate(self.g.domain):
            if is_one(d):
                extents.append(f"    n{k} = 1")
            elif type(d) is int and d <= SMALL_EXTENT and k == len(self.g.domain) - 1:
                # a short innermost axis of static size (xyz, rgb): a literal trip count,
                # which LLVM unrolls instead of running a three-step loop per element
                extents.append(f"    n{k} = {d}")
            elif k in self.extent_src:
                extents.append(f"    n{k} = {self.extent_src[k]}")
            else:
                self.args.append(KernelArg(f"n{k}", "extent", d))
        order = {"input": 0, "const": 1, "size": 2, "extent": 3, "output": 4}
        self.args.sort(key=lambda a: order[a.kind])
        params = ", ".join(a.name for a in self.args)
        flags = f"parallel={self.parallel}, error_model=\"numpy\", nogil=True, cache={{cache}}"
        body = _widened(self.lines) if _computes_polynomials(self.lines) else self.lines
        lines = [f"@njit({flags})", f"def kernel({params}):", *extents,
                 *self.preamble.values(), *body]
        summary = ", ".join(self.g.op_names)
        source = _HEADER.format(summary=summary) + "\n".join(lines) + "\n"
        return KernelSource(self.g, source, self.args, self.parallel, into=dict(self.into))


_POLYNOMIAL_CALL = re.compile(r"\b(?:exp|tanh|log)_f(?:32|64)\(")


def _computes_polynomials(lines: list[str]) -> bool:
    """Whether the kernel calls the exp/tanh/log approximations, on a CPU with 512-bit vectors."""
    return has_wide_vectors() and any(_POLYNOMIAL_CALL.search(line) for line in lines)


def _widened(lines: list[str]) -> list[str]:
    """``lines`` marked for 512-bit vectors (``runtime.prefer_wide_vectors``): at the top, and
    first in each ``prange`` body, which numba compiles as a function of its own."""
    out = ["    prefer_wide_vectors()"]
    for line in lines:
        out.append(line)
        if " in prange(" in line:
            indent = len(line) - len(line.lstrip()) + 4
            out.append(" " * indent + "prefer_wide_vectors()")
    return out


def _constant_reciprocal(node: Node, low: object) -> np.floating | None:
    """``x / c`` by a constant whose reciprocal is a normal number: ``1/c``, by which the kernel
    multiplies (a multiplication instead of a division per element; within one rounding of the
    quotient, exact for a power of two), else None."""
    if (getattr(node.target, "name", None) != "divide" or not isinstance(low, Lowered)
            or low.dtype.kind != "f" or len(low.operands) != 2):
        return None
    divisor = low.operands[1].value
    if type(divisor) not in (int, float) and not (
            isinstance(divisor, np.generic) and divisor.dtype.kind in "iuf"):
        return None
    with np.errstate(all="ignore"):
        c = low.dtype.type(divisor)
        r = low.dtype.type(1) / c
    tiny = np.finfo(low.dtype).tiny
    if not (np.isfinite(c) and np.isfinite(r) and abs(c) >= tiny and abs(r) >= tiny):
        return None
    return r


def generate_kernel(group: FusionGroup, parallel: bool,
                    into: dict[Node, Node] | None = None, returns: bool = False) -> KernelSource:
    """The module source of ``group``'s kernel; ``{cache}`` in it is filled in by the caller.

    ``into`` maps outputs to the input each is stored into (``program.direct_writes``: an
    elementwise group whose every read of that input is at the index it writes). The caller
    passes that input's array, or a C-contiguous copy of it when it must not be written.

    ``returns``: a serial kernel of scalar (0-d) outputs returns them instead (a tuple,
    ``KernelSource.returns``); ``ValueError`` if the group has an output of another shape."""
    if into and group.reduce_axes:
        raise ValueError("a kernel with reductions cannot store into an input it reads")
    if returns and (parallel or into):
        raise ValueError("a returning kernel is serial and stores into no input")
    return _KernelWriter(group, parallel, into or {}, returns).write()
