"""The one way a VJP rule is registered: ``@vjp("name", ...)`` files it in ``RULES``.

Each ``vjp_*`` module registers its rules with this decorator where they are written (or calls
``vjp(name)(rule)`` for a rule a factory builds); ``vjp_rules`` imports them all and attaches
``RULES`` to the ops (``op.vjp``). A second rule for one op name is a programming error.
"""

from __future__ import annotations

from collections.abc import Callable

Rule = Callable[..., tuple]

#: op name -> its VJP rule, from every ``vjp_*`` module.
RULES: dict[str, Rule] = {}


def vjp(*names: str) -> Callable[[Rule], Rule]:
    """Register the decorated rule as the VJP of the ops called ``names``."""

    def register(rule: Rule) -> Rule:
        for name in names:
            if name in RULES:
                raise ValueError(f"a VJP rule for {name!r} is already registered")
            RULES[name] = rule
        return rule

    return register
