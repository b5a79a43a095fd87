"""What users may copy: the public names of npdynamo, and the ``npdynamo...`` names a piece of
code uses (the examples and the documentation's code are checked against them)."""

import ast
import importlib
import types


def is_public(dotted: str) -> bool:
    """``npdynamo.a.b``: down to the first value that is not a module, each name is in its
    module's ``__all__`` (what users may copy); a value's own attributes are its business, but
    none starts with an underscore."""
    parts = dotted.split(".")
    obj = importlib.import_module(parts[0])
    for name in parts[1:]:
        if name.startswith("_"):
            return False
        if isinstance(obj, types.ModuleType):
            # a module without __all__ that users reach publicly (npdynamo.config): its names
            if name not in getattr(obj, "__all__", dir(obj)):
                return False
            obj = getattr(obj, name)
    return True


def npdynamo_names(source: str) -> set[str]:
    """Every ``npdynamo...`` name a piece of code imports or reaches by attributes."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.split(".")[0] == "npdynamo"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "npdynamo":
            names |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == "npdynamo":
                names.add(".".join(["npdynamo", *reversed(chain)]))
    return names
