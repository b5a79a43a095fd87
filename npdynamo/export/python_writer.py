"""``ExportedProgram.to_python``: the program as one readable module that needs only NumPy.

The graph's code is what the fx code generator writes for the eager backend (``fx/codegen.py``:
one NumPy call per op, the sizes read from the inputs' shapes). Each graph becomes a factory
function holding the objects its code names (``_sum = functools.partial(np.add.reduce,
axis=None)``), so names never clash between graphs; subgraphs (branches, loop bodies) are
graphs of their own. The objects are written as source: NumPy functions and ufuncs by their
public names, npdynamo's own op implementations by their source text (with their closures'
values as a factory's parameters), lambdas by their expression. Anything else (an op whose
implementation calls into npdynamo) raises ``ExportError`` naming it. The constants go to
``<module>.npz`` beside the module, read with ``allow_pickle=False``.
"""

from __future__ import annotations

import ast
import dis
import functools
import inspect
import operator  # noqa: F401  (generated modules name its functions)
import os
import sys
import textwrap
import types
from typing import TYPE_CHECKING, Any

import numpy as np

from npdynamo.export import choice
from npdynamo.export.schema import ExportError, tree_text
from npdynamo.fx import GraphModule
from npdynamo.fx.subgraphs import is_subgraph
from npdynamo.generated import Names, unique_name
from npdynamo.ops import speculation

if TYPE_CHECKING:
    from npdynamo.export.program import ExportedProgram

_LITERALS = (bool, int, float, complex, str, bytes, type(None))


def to_python(ep: ExportedProgram, path: str | os.PathLike) -> None:
    """Write ``path`` (a ``.py`` module defining ``ep.name``) and ``<path minus .py>.npz``."""
    path = os.fspath(path)
    stem = path[:-3] if path.endswith(".py") else path
    writer = _Writer()
    gm = ep.graph_module()
    main = writer.graph(gm)
    # trailing parameters fixed at export (a default the call left out) keep that default
    fixed = {p[0]: v for p, v in ep.fixed_args if len(p) == 1}
    names = list(ep.params)
    defaults: list[str] = []
    while names and names[-1] in fixed:
        name = names.pop()
        defaults.insert(0, f"{name}={writer.expr(fixed[name])}")
    params = ", ".join([*names, *defaults])
    lines = [
        f'"""{ep.name}: exported by npdynamo; needs only NumPy.',
        "",
        f"Call {ep.name}({params}). Input spec:",
        *[f"    {line}" for line in str(ep).splitlines()[1:] if not line.startswith("  graph")
          and not line.startswith("    graph") and not line.startswith("        ")],
        '"""',
        "",
        "import functools  # noqa: F401",
        "import math  # noqa: F401",
        "import operator  # noqa: F401",
        "import os",
        "",
        "import numpy as np",
        "",
        "_HERE = os.path.dirname(os.path.abspath(__file__))",
        f"_CONSTANTS = dict(np.load(os.path.join(_HERE, {os.path.basename(stem) + '.npz'!r}), "
        "allow_pickle=False))",
        "",
        *writer.lines,
        "",
        f"_forward = {main}()",
        "",
        "",
        f"def {ep.name}({params}):",
    ]
    args = []
    for spec in ep.inputs:
        if spec.kind == "constant":
            args.append(f"_CONSTANTS[{spec.name!r}]")
        else:
            args.append(spec.path[0] + "".join(f"[{k!r}]" for k in spec.path[1:]))
    lines.append(f"    outs = _forward({', '.join(args)})")
    for index, target in ep.mutations.items():
        spec = next(s for s in ep.inputs if s.name == target)
        if spec.kind == "constant":
            lines.append(f"    _CONSTANTS[{target!r}] = np.array(outs[{index}], copy=True)")
        else:
            dest = spec.path[0] + "".join(f"[{k!r}]" for k in spec.path[1:])
            lines.append(f"    np.copyto({dest}, outs[{index}])")
    lines.append(f"    return {tree_text(ep.output_tree, 'outs[{}]')}")
    source = "\n".join(lines) + "\n"
    compile(source, path, "exec")  # a writer bug shows here, not on the deployment machine
    with open(path, "w") as f:
        f.write(source)
    np.savez(stem + ".npz", **{k: np.asarray(v) for k, v in ep.constants.items()})


class _Writer:
    """Collects module-level definitions; ``expr(obj)`` is the source naming ``obj``."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.used = Names()
        self.keep: list = []  # keeps the objects alive so that ids stay unique

    def fresh(self, hint: str) -> str:
        return unique_name("_" + hint.lstrip("_").replace("<", "").replace(">", ""), self.used)

    def graph(self, gm: GraphModule) -> str:
        """A factory ``def _graph(): <globals>; def forward(...): ...; return forward``."""
        found = self.names.get(id(gm))
        if found is not None:
            return found
        name = self.fresh(f"graph_{gm.name}")
        self.names[id(gm)] = name
        self.keep.append(gm)
        code = gm.code
        scope = gm.forward.__globals__
        own = gm.forward.__name__
        body = []
        for key, value in scope.items():
            if key.startswith("__") or key == own or key not in code:
                continue
            if value is speculation.chosen.impl:  # Python's choice where it is proved exact
                choice.numpy_only(gm.graph)
                value = choice.choose
            body.append(f"    {key} = {self.expr(value, key)}")
        body += ["    " + line if line else "" for line in code.splitlines()]
        body.append(f"    return {own}")
        self.lines += [f"def {name}():", *body, "", ""]
        return name

    def expr(self, obj: Any, hint: str = "obj") -> str:
        if type(obj) in _LITERALS:
            return repr(obj) if not (type(obj) is float and not np.isfinite(obj)) else \
                f"float({str(obj)!r})"
        if type(obj) in (tuple, list):
            items = [self.expr(v, hint) for v in obj]
            return ("(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
                    if type(obj) is tuple else "[" + ", ".join(items) + "]")
        if type(obj) is dict:
            return "{" + ", ".join(f"{self.expr(k)}: {self.expr(v)}" for k, v in obj.items()) + "}"
        if type(obj) is slice:
            return f"slice({self.expr(obj.start)}, {self.expr(obj.stop)}, {self.expr(obj.step)})"
        if obj is Ellipsis:
            return "Ellipsis"
        if obj is np:
            return "np"
        if isinstance(obj, types.ModuleType) and obj.__name__.startswith("numpy."):
            return "np." + obj.__name__[len("numpy."):]
        if isinstance(obj, np.dtype):
            return f"np.dtype({obj.str!r})" if obj.names is None else _fail(obj)
        if isinstance(obj, type) and issubclass(obj, np.generic):
            return f"np.{obj.__name__}"
        if isinstance(obj, np.generic):
            return f"np.{type(obj).__name__}({obj.item()!r})"
        if isinstance(obj, np.ndarray):
            return f"np.array({obj.tolist()!r}, dtype={self.expr(obj.dtype)})"
        if isinstance(obj, type) and obj.__module__ == "builtins":
            return obj.__name__
        if isinstance(obj, functools.partial):
            args = [self.expr(obj.func, hint), *(self.expr(a) for a in obj.args),
                    *(f"{k}={self.expr(v)}" for k, v in obj.keywords.items())]
            return f"functools.partial({', '.join(args)})"
        if is_subgraph(obj):
            return f"{self.graph(obj)}()"
        public = _numpy_name(obj)
        if public is not None:
            return public
        if isinstance(obj, types.BuiltinFunctionType) and isinstance(
                getattr(obj, "__self__", None), np.ufunc):
            return f"{self.expr(obj.__self__)}.{obj.__name__}"
        if isinstance(obj, types.BuiltinFunctionType) and obj.__module__ in (
                "builtins", "math", "_operator"):
            module = {"builtins": "", "math": "math.", "_operator": "operator."}[obj.__module__]
            if obj.__module__ != "builtins" and getattr(
                    sys.modules[module[:-1]], obj.__name__, None) is not obj:
                return _fail(obj)
            return module + obj.__name__
        if isinstance(obj, types.FunctionType):
            return self.function(obj, hint)
        return _fail(obj)

    def function(self, fn: types.FunctionType, hint: str) -> str:
        found = self.names.get(id(fn))
        if found is not None:
            return found
        name = self.fresh("h" + (fn.__name__ if fn.__name__ != "<lambda>" else hint))
        self.names[id(fn)] = name
        self.keep.append(fn)
        code = fn.__code__
        needed = _global_names(code)
        outer = []
        for key in sorted(needed):
            if key in fn.__globals__ and key not in ("np", "numpy"):
                outer.append(f"    {key} = {self.expr(fn.__globals__[key], key)}")
            elif key in fn.__globals__ and fn.__globals__[key] is not np:
                return _fail(fn)
        free = [f"    {var} = {self.expr(cell.cell_contents, var)}"
                for var, cell in zip(code.co_freevars, fn.__closure__ or ())]
        defaults = fn.__defaults__ or ()
        if fn.__name__ == "<lambda>":
            body = f"    return {_lambda_source(fn)}"
        else:
            source, defined = _function_source(fn, self.expr)
            body = textwrap.indent(source, "    ") + f"\n    return {defined}"
        if defaults and fn.__name__ == "<lambda>":
            return _fail(fn)
        self.lines += [f"def {name}_factory():", *outer, *free, body, "", "",
                       f"{name} = {name}_factory()", "", ""]
        return name


def _lambda_source(fn: types.FunctionType) -> str:
    """The lambda's expression, found in the statement lines ``inspect`` gives (a lambda
    inside a call spans an unclosed parenthesis there: close it)."""
    try:
        text = textwrap.dedent(inspect.getsource(fn)).strip().rstrip(",")
    except (OSError, TypeError):
        return _fail(fn)
    wanted = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
    for closing in range(6):
        try:
            tree = ast.parse(text + ")" * closing)
        except SyntaxError:
            continue
        found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
                 and [a.arg for a in n.args.args] == wanted]
        if len(found) == 1:
            return ast.unparse(found[0])
        break
    return _fail(fn)


def _function_source(fn: types.FunctionType, expr: Any) -> tuple[str, str]:
    """``fn``'s definition without annotations (they may name typing helpers), its defaults
    written as the values they are (``dtype=_FLOAT64`` -> ``dtype=np.dtype('<f8')``), and the
    name it defines."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return _fail(fn)
    (node,) = tree.body
    if not isinstance(node, ast.FunctionDef) or node.decorator_list:
        return _fail(fn)
    values = list(fn.__defaults__ or ())
    if len(values) != len(node.args.defaults):
        return _fail(fn)
    node.args.defaults = [ast.parse(expr(v), mode="eval").body for v in values]
    kw = fn.__kwdefaults__ or {}
    node.args.kw_defaults = [None if a.arg not in kw else
                             ast.parse(expr(kw[a.arg]), mode="eval").body
                             for a in node.args.kwonlyargs]
    node.returns = None
    for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                node.args.vararg, node.args.kwarg):
        if arg is not None:
            arg.annotation = None
    return ast.unparse(node), node.name


def _global_names(code: types.CodeType) -> set[str]:
    """The global names ``code`` (and the code nested in it) reads; attribute names are not."""
    names = {ins.argval for ins in dis.get_instructions(code)
             if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _numpy_name(obj: Any) -> str | None:
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str):
        return None
    for prefix, module in (("np", np), ("np.linalg", np.linalg)):
        if getattr(module, name, None) is obj:
            return f"{prefix}.{name}"
    return None


def _fail(obj: Any) -> str:
    raise ExportError(f"{obj!r:.80} has no NumPy-only form (it needs npdynamo at run time)")
