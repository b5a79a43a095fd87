"""Which class attributes' ``__get__`` the evaluator may run at capture time (``calls.user_attr``).

A descriptor whose ``__get__`` is user code, or C code not known to be quiet, is read natively at
a graph break: reading it once at capture would drop its calls, or its warnings, from every run.
"""

from __future__ import annotations

import collections
import enum
import functools
import types

#: Descriptor classes written in Python whose __get__ only reads the member (enum members'
#: ``.name``/``.value``): reading them at capture time is what Python would do.
_PURE_DESCRIPTORS = (types.DynamicClassAttribute, enum.property)
#: C descriptor classes outside ``builtins`` whose __get__ only binds or reads: namedtuple
#: fields, ``functools.lru_cache`` wrappers.
_PURE_C_DESCRIPTORS = frozenset({type(collections.namedtuple("_Pair", "a").a),
                                 type(functools.lru_cache(lambda: None))})


def user_descriptor(attr: object) -> bool:
    """True for a class attribute whose ``__get__`` is not CPython's own (a C slot) and is
    none of the kinds ``user_attr`` models (functions, static/class methods, properties)."""
    if attr is None or isinstance(attr, (types.FunctionType, staticmethod, classmethod,
                                         property, *_PURE_DESCRIPTORS)):
        return False
    get = getattr(type(attr), "__get__", None)
    if get is None:
        return False
    # only known C slots bind or read quietly: 3.13's partial.__get__ warns at the reading line
    # (a read at capture or in a guard misplaced it: test_functools.test_partial_as_method)
    return not (isinstance(get, types.WrapperDescriptorType)
                and (type(attr).__module__ == "builtins" or type(attr) in _PURE_C_DESCRIPTORS))
