"""``npdynamo.export``: capture a function whole, as ``fullgraph=True`` would, into a program.

The only module of the export stage that uses the capture stage (the loader and the writers
never import it). It runs the same translator as ``compile`` over the function's frame
(``capture/translator.py``), with the dimensions named by ``dynamic_shapes`` made symbolic
through ``mark_dynamic`` and every other size static. A graph break is an ``Unsupported``
error with explain's reason, file and line. The captured graph's placeholders are sorted into
the program's inputs (arrays reached from the arguments through dicts, lists and tuples) and
its constants (arrays read from globals, closures, attributes: the weights), the returned
structure becomes the output spec, and every array written in place becomes an extra output
plus a mutation record. Python-level side effects (list appends, attribute or global stores)
have no place in a program: they are refused.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo.capture.compile_frame import to_unsupported
from npdynamo.capture.dynamic_dims import mark_dynamic
from npdynamo.capture.entry import check_written_arrays, read_source
from npdynamo.capture.errors import CaptureUnsupported, RollRefused, UserCodeRaises
from npdynamo.capture.guards import AttrSource, ItemSource, LocalSource
from npdynamo.capture.session import CaptureContext
from npdynamo.capture.translator import root_frame
from npdynamo.capture.values import (
    ArrayValue,
    ComputedNumberValue,
    Const,
    DictValue,
    ListValue,
    NamedTupleValue,
    TupleValue,
    Value,
)
from npdynamo.errors import InvalidArgument, Unsupported
from npdynamo.export.program import Dim, ExportedProgram, InputSpec, InvalidDim, path_text
from npdynamo.fx.passes.cse import common_subexpression_elimination
from npdynamo.fx.passes.dce import dead_code_elimination
from npdynamo.ops.nonzero_indices import COUNT_SAVED, refusing
from npdynamo.ops.symbolic import Fact, FactRecorder, SymInt, compare, free_symbols
from npdynamo.ops.symbolic_code import symbol_name

_LEAF_TYPES = (bool, int, float, complex, str, type(None))


def export(fn: Callable, *args: Any, dynamic_shapes: Any = None,
           **kwargs: Any) -> ExportedProgram:
    """``fn`` captured as ONE graph for these example arguments; see ``docs/export.md``.

    ``dynamic_shapes`` follows the arguments' structure: a dict by parameter name (or a
    tuple/list by position) whose entry for an array is ``{dim: Dim(...)}`` or a tuple with a
    ``Dim`` or ``None`` per dimension. Other dimensions are static."""
    fn, bound_self = _plain_function(fn)
    sig = inspect.signature(fn)
    params = [p for p in sig.parameters.values()]
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        raise InvalidArgument(f"npdynamo.export: {fn.__qualname__} takes *args or **kwargs; "
                              "export a function with named parameters")
    call_args = (bound_self, *args) if bound_self is not None else args
    try:
        bound = sig.bind(*call_args, **kwargs)
    except TypeError as exc:
        raise InvalidArgument(f"npdynamo.export: {fn.__qualname__}: {exc}") from None
    bound.apply_defaults()
    names = [p.name for p in params]
    user_params = names[1:] if bound_self is not None else names
    marks = _dims_by_param(dynamic_shapes, user_params)
    values = {}
    dim_of: dict[tuple, Dim] = {}
    for name in names:
        value = bound.arguments[name]
        if name in user_params:
            value = _prepare(value, (name,), marks.get(name), dim_of, fn)
        values[name] = value
    frame_args = tuple(values[n] for n in names)
    unrolled: dict[tuple, str] = {}
    while True:
        ctx = _ExportContext(fn, dynamic=False, unrolled_loops=unrolled)
        try:
            with refusing(COUNT_SAVED):
                result = root_frame(ctx, frame_args).run()
            check_written_arrays(ctx)
            return _program(ctx, result, values, user_params, dim_of, fn)
        except RollRefused as refused:
            unrolled[refused.key] = refused.note
        except UserCodeRaises as exc:
            raise exc.error from None
        except CaptureUnsupported as exc:
            raise to_unsupported(exc) from None


class _ExportContext(CaptureContext):
    """A capture that remembers where Python code specialised a symbolic size (for the error
    that says which line pinned a ``Dim``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pinned: list[tuple[Any, Any]] = []

    def concrete(self, size: Any) -> Any:
        if isinstance(size, SymInt):
            self.pinned.append((size, self.location()))
        return super().concrete(size)


def _plain_function(fn: Callable) -> tuple[types.FunctionType, object]:
    bound_self = None
    if inspect.ismethod(fn):
        bound_self, fn = fn.__self__, fn.__func__
    fn = getattr(fn, "__wrapped__", fn)  # a compiled function: its user function
    if not isinstance(fn, types.FunctionType):
        raise InvalidArgument(f"npdynamo.export takes a Python function, not {fn!r}")
    return fn, bound_self


def _dims_by_param(spec: Any, params: list[str]) -> dict[str, Any]:
    if spec is None:
        return {}
    if isinstance(spec, dict):
        unknown = set(spec) - set(params)
        if unknown:
            raise InvalidDim(f"dynamic_shapes names no parameter {sorted(unknown)}")
        return dict(spec)
    if isinstance(spec, (tuple, list)):
        if len(spec) > len(params):
            raise InvalidDim("dynamic_shapes has more entries than the function has parameters")
        return dict(zip(params, spec))
    raise InvalidDim(f"dynamic_shapes must be a dict or a tuple, not {type(spec).__name__}")


def _prepare(value: Any, path: tuple, spec: Any, dim_of: dict, fn) -> Any:
    """The example value as the capture sees it: arrays with named Dims are copies whose
    dimensions are marked dynamic (so the user's arrays keep no marks)."""
    if isinstance(value, np.ndarray):
        dims = _array_dims(spec, value, path)
        if not dims:
            return value
        copy = value.copy()
        for d, dim in dims.items():
            if value.shape[d] < 2:
                raise InvalidDim(f"npdynamo.export: dimension {d} of {path_text(path)} is "
                                 f"{dim.name} but its example size is {value.shape[d]}; give "
                                 "an example of size >= 2 (sizes 0 and 1 are specialised)")
            mark_dynamic(copy, d)
            dim_of[(*path, d)] = dim
        return copy
    if type(value) in (tuple, list):
        specs = spec if isinstance(spec, (tuple, list)) else [None] * len(value)
        return type(value)(_prepare(v, (*path, i), s, dim_of, fn)
                           for i, (v, s) in enumerate(zip(value, specs)))
    if type(value) is dict:
        specs = spec if isinstance(spec, dict) else {}
        return {k: _prepare(v, (*path, k), specs.get(k), dim_of, fn) for k, v in value.items()}
    if spec is not None:
        raise InvalidDim(f"dynamic_shapes gives dimensions for {path_text(path)}, which is not an "
                         "array")
    return value


def _array_dims(spec: Any, value: np.ndarray, path: tuple) -> dict[int, Dim]:
    if spec is None:
        return {}
    if isinstance(spec, dict):
        items = spec.items()
    elif isinstance(spec, (tuple, list)):
        items = enumerate(spec)
    else:
        raise InvalidDim(f"dynamic_shapes for {path_text(path)}: give {{dim: Dim(...)}} or a tuple "
                         "of Dim/None per dimension")
    out = {}
    for d, dim in items:
        if dim is None:
            continue
        if not isinstance(dim, Dim) or type(d) is not int or not -value.ndim <= d < value.ndim:
            raise InvalidDim(f"dynamic_shapes for {path_text(path)}: bad entry {d!r}: {dim!r}")
        out[d % value.ndim] = dim
    return out


def _program(ctx: CaptureContext, result: Value, values: dict, user_params: list[str],
             dim_of: dict, fn) -> ExportedProgram:
    effects = ctx.side_effects
    changes = [m for m in effects.mutations if not _stores_back(m)]
    if changes or effects.global_stores:
        what = changes[0].kind if changes else "a global assignment"
        raise Unsupported(f"npdynamo.export: {fn.__qualname__} changes Python state ({what}); "
                          "an exported program may only return values and write arrays")
    graph = ctx.graph
    specs, by_source = _input_specs(ctx, user_params)
    outputs: list = []
    tree = _output_tree(result, outputs, fn)
    mutations = {}
    for array in effects.arrays:
        holder = by_source.get(array.source)
        if holder is None:
            raise Unsupported(f"npdynamo.export: {fn.__qualname__} writes {array.source.short()}"
                              ", which the graph never reads")
        if array.node is not holder:
            mutations[len(outputs)] = holder.name
            outputs.append(array.node)
    graph.output(tuple(outputs))
    common_subexpression_elimination(graph)
    dead_code_elimination(graph)
    for node in list(graph.placeholders):
        spec = specs[node.name]
        if not node.users and spec.kind == "constant":
            graph.erase_node(node)
    constants = {}
    inputs = []
    for node in graph.placeholders:
        spec = specs[node.name]
        if spec.kind == "constant":
            source = next(s for n, s in ctx.placeholders if n is node)
            constants[node.name] = np.array(
                read_source(source, tuple(values[n] for n in ctx.arg_names), ctx), copy=True)
        inputs.append(spec)
    dims, facts = _dims(ctx, inputs, dim_of, fn)
    return ExportedProgram(
        graph=graph, inputs=inputs, fixed_args=_fixed_leaves(values, user_params, inputs),
        params=user_params, output_tree=tree, mutations=mutations, constants=constants,
        dims=dims, facts=facts, name=fn.__name__)


def _stores_back(m) -> bool:
    """``d[k] += x`` / ``obj.w -= g``: the array written in place is stored back into the slot
    it was read from, which changes nothing but the array (a mutation the program keeps)."""
    if m.kind not in ("dict_set", "attr_set") or len(m.args) != 2:
        return False
    key, value = m.args
    base = getattr(m.target, "source", None)
    if not isinstance(value, ArrayValue) or base is None:
        return False
    slot = ItemSource(base, key) if m.kind == "dict_set" else AttrSource(base, key)
    return value.source == slot


def _input_specs(ctx: CaptureContext, user_params: list[str]):
    specs, by_source = {}, {}
    for node, source in ctx.placeholders:
        by_source[source] = node
        path = _arg_path(source)
        meta = node.meta["val"]
        if path is not None and path[0] in user_params:
            specs[node.name] = InputSpec(node.name, "input", meta, path)
        elif path is not None and len(path) > 0 and path[0] not in user_params:
            specs[node.name] = InputSpec(node.name, "constant", meta)  # the bound self's items
        elif _under_argument(source, user_params):
            raise ctx.unsupported(
                f"npdynamo.export: {source.short()} is read from an argument through an "
                "attribute; a program's inputs are arrays, or dicts/lists/tuples of arrays",
                "pass the arrays themselves, or keep the object in a global or closure")
        else:
            specs[node.name] = InputSpec(node.name, "constant", meta)
    return specs, by_source


def _arg_path(source) -> tuple | None:
    keys = []
    while isinstance(source, ItemSource):
        if type(source.key) not in (int, str):
            return None
        keys.append(source.key)
        source = source.base
    if isinstance(source, LocalSource):
        return (source.var, *reversed(keys))
    return None


def _under_argument(source, user_params: list[str]) -> bool:
    while hasattr(source, "base"):
        source = source.base
    return isinstance(source, LocalSource) and source.var in user_params


def _output_tree(value: Value, outputs: list, fn) -> Any:
    if isinstance(value, ArrayValue):
        outputs.append(value.node)
        return {"out": len(outputs) - 1}
    if isinstance(value, ComputedNumberValue):
        raise Unsupported(f"npdynamo.export: {fn.__qualname__} returns a Python number computed "
                          "from arrays (float(x), x.item()); return the array instead")
    if isinstance(value, Const) and type(value.value) in _LEAF_TYPES:
        return {"const": value.value}
    if isinstance(value, TupleValue) and not isinstance(value, NamedTupleValue):
        return {"tuple": [_output_tree(v, outputs, fn) for v in value.items]}
    if isinstance(value, ListValue):
        return {"list": [_output_tree(v, outputs, fn) for v in value.items]}
    if isinstance(value, DictValue) and all(type(k) is str for k in value.items):
        return {"dict": [[k, _output_tree(v, outputs, fn)] for k, v in value.items.items()]}
    raise Unsupported(f"npdynamo.export: {fn.__qualname__} returns a {value.kind()}; a program "
                      "returns arrays, Python constants, and tuples/lists/dicts of them")


def _plain_sequence(value: Any) -> bool:
    """A tuple or list of Python numbers, strings and None (``mask=(1, 0, 1)``), nested or not."""
    return type(value) in (tuple, list) and all(
        type(v) in _LEAF_TYPES or _plain_sequence(v) for v in value)


def _fixed_leaves(values: dict, user_params: list[str], inputs: list[InputSpec]) -> list:
    taken = {s.path for s in inputs if s.kind == "input"}
    out: list = []

    def walk(value: Any, path: tuple) -> None:
        if path in taken or isinstance(value, np.ndarray):
            return
        if _plain_sequence(value) and not any(p[:len(path)] == path for p in taken):
            out.append((path, value))  # fixed whole: its length too, and a call may omit it
            return
        if type(value) in (tuple, list):
            for i, v in enumerate(value):
                walk(v, (*path, i))
        elif type(value) is dict:
            for k, v in value.items():
                walk(v, (*path, k))
        elif type(value) in _LEAF_TYPES:
            out.append((path, value))
        else:
            raise InvalidArgument(
                f"npdynamo.export: argument {path_text(path)} is a {type(value).__name__}; an "
                "exported program takes arrays, Python numbers, strings, None, and "
                "tuples/lists/dicts of them")

    for name in user_params:
        walk(values[name], (name,))
    return out


def _dims(ctx: CaptureContext, inputs: list[InputSpec], dim_of: dict, fn):
    dims: dict[str, tuple[str, int, int | None]] = {}
    first: dict[str, Any] = {}
    recorder = FactRecorder()
    for spec in inputs:
        if spec.kind != "input" or not hasattr(spec.meta, "shape"):
            continue
        for d, size in enumerate(spec.meta.shape):
            sym = symbol_name(size)
            dim = dim_of.get((*spec.path, d))
            if sym is None or dim is None:
                continue
            dims[sym] = (dim.name, dim.min, dim.max)
            if dim.name in first:
                other = first[dim.name]
                if other.hint != size.hint:
                    raise InvalidDim(f"npdynamo.export: Dim {dim.name!r} names sizes "
                                     f"{other.hint} and {size.hint} in the examples")
                with recorder:
                    compare(size, "==", other)
            else:
                first[dim.name] = size
    facts = [*ctx.facts.facts, *recorder.facts]
    for fact in ctx.facts.facts:
        _refuse_specialised(fact, dims, fn, ctx.pinned)
    return dims, list({f.key: f for f in facts}.values())


def _refuse_specialised(fact: Fact, dims: dict, fn, pinned: list) -> None:
    if fact.rel != "==" or len(fact.expr.terms) != 1:
        return
    ((mono, coeff),) = fact.expr.terms
    if len(mono) == 1 and coeff == 1 and getattr(mono[0], "name", None) in dims:
        name = dims[mono[0].name][0]
        where = next((loc for size, loc in pinned if loc is not None and
                      mono[0].name in free_symbols(size)), None)
        at = (f"Python code at {where.filename}:{where.lineno} reads it: "
              f"{where.source_line.strip()}" if where is not None else
              "an op or Python code needs that one size")
        error = Unsupported(
            f"npdynamo.export: {fn.__qualname__} specialises the dynamic dimension {name} to "
            f"{fact.value} ({at}); drop the Dim, or keep the size symbolic (x.shape[0] passed "
            "straight to an op, np.zeros_like, reshape(-1, ...))")
        error.location = where
        raise error
