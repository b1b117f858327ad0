"""Any constraint → a regular language or a context-free grammar, once.

``lower(spec)`` is the one place a spec's kind is read: a ``Regex``, a
``Choice``, a ``Where`` predicate and a JSON schema that lowers to a regex
become a :class:`Regular`; a ``Grammar`` and a JSON schema that lowers to a
grammar become a :class:`ContextFree`, whose :meth:`ContextFree.reduce` is
the reduced grammar (terminal DFAs, productive rules, used and ignored
terminals) grammar backends compile. Results are cached by the spec's
content (``lower.cache_clear()`` empties the cache).

Backends reach this through ``BaseCompiler``: they implement
``compile_regular`` and ``compile_grammar`` and never branch on a kind.
"""

from __future__ import annotations

import functools

from ..automata import ByteDFA, Empty, Literal, alt, parse_regex
from ..caching import core_cache
from ..errors import UnsupportedConstraint
from ..grammar import lower_grammar
from ..jsonschema import lower_json_schema
from ..specs import Constraint
from .languages import (
    ContextFree,
    ReducedGrammar,
    Regular,
    productive_rules,
    reachable_rules,
    reduce_grammar,
)
from .predicates import dfa_for_predicate

__all__ = [
    "ContextFree",
    "Language",
    "ReducedGrammar",
    "Regular",
    "dfa_for_predicate",
    "lower",
    "productive_rules",
    "reachable_rules",
    "reduce_grammar",
]

Language = Regular | ContextFree


@functools.lru_cache(maxsize=256)
def lower(spec: Constraint) -> Language:
    """The language of ``spec`` (see the module docstring).

    Raises ``ConstraintError`` for a malformed spec, ``UnsupportedConstraint``
    for a construct the core cannot lower (naming it) or a kind it does not
    know (a plugin's own kind), ``CompileLimitExceeded`` past the lowering's
    size bounds."""
    kind = spec.kind
    if kind == "json_schema":
        return lower(lower_json_schema(spec))
    if kind == "regex":
        return Regular.from_node(parse_regex(spec.pattern))
    if kind == "choice":
        options = spec.options
        return Regular(
            alt(*(Literal(option) if option else Empty() for option in options)),
            lambda _max_states: ByteDFA.from_strings(o.encode("utf-8") for o in options),
        )
    if kind == "where":
        predicate = spec.predicate
        return Regular(None, lambda max_states: dfa_for_predicate(predicate, max_states=max_states))
    if kind == "grammar":
        return ContextFree(lower_grammar(spec))
    raise UnsupportedConstraint("lowering", f"{kind} constraints", "the core lowers no such kind")


core_cache("lowered specs", lower)
