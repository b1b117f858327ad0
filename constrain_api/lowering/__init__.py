"""Any constraint → a regular language or a context-free grammar, once.

``lower(spec)`` is the one place a spec's kind is read: a ``Regex``, a
``Choice``, a ``Where`` predicate and a JSON schema that lowers to a regex
become a :class:`Regular`; a ``Grammar`` and a JSON schema that lowers to a
grammar become a :class:`ContextFree`, whose :meth:`ContextFree.reduce` is
the reduced grammar (terminal DFAs, productive rules, used and ignored
terminals) grammar backends compile. Results are cached by the spec's
content (``lower.cache_clear()`` empties the cache).

A language with no string at all is an error, the same on every backend
and before any engine sees it: ``lower`` raises ``ConstraintError`` ("no
text satisfies it", for schemas with the JSON pointers of the sub-schemas
that admit no value), never a constraint whose first mask is empty. (A
``where`` predicate's emptiness is left to its automaton: an empty first
mask.)

Backends reach this through ``BaseCompiler``: they implement
``compile_regular`` and ``compile_grammar`` and never branch on a kind.
"""

from __future__ import annotations

import functools

from ..automata import ByteDFA, Empty, Literal, Node, alt, parse_regex
from ..automata.lazy import has_string
from ..automata.regex import has_lookaround, is_void
from ..budget import is_budget_error
from ..caching import SPEC_GRAPHS, core_cache
from ..errors import CompileLimitExceeded, ConstraintError, UnsupportedConstraint
from ..grammar import GrammarIR, lower_grammar
from ..jsonschema import lower_json_schema_ir
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


@functools.lru_cache(maxsize=SPEC_GRAPHS)
def lower(spec: Constraint) -> Language:
    """The language of ``spec`` (see the module docstring).

    Raises ``ConstraintError`` for a malformed spec, ``UnsupportedConstraint``
    for a construct the core cannot lower (naming it) or a kind it does not
    know (a plugin's own kind), ``CompileLimitExceeded`` past the lowering's
    size bounds."""
    kind = spec.kind
    if kind == "json_schema":
        try:
            lowered = lower_json_schema_ir(spec)
            if isinstance(lowered, GrammarIR):
                return _context_free(lowered)
            if _no_string(lowered):
                raise ConstraintError("regex", _EMPTY)
            return Regular.from_node(lowered)
        except ConstraintError as e:  # a lowered form with no string: the schema's fault
            if _EMPTY not in e.message:
                raise
            raise ConstraintError("json_schema", "no JSON value satisfies the schema", "#") from e
    if kind == "regex":
        node = parse_regex(spec.pattern)
        if _no_string(node):
            raise ConstraintError("regex", _EMPTY)
        return Regular.from_node(node)
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
        return _context_free(lower_grammar(spec))
    raise UnsupportedConstraint("lowering", f"{kind} constraints", "the core lowers no such kind")


core_cache("lowered specs", lower)

_EMPTY = "no text satisfies it (its language is empty)"


def _context_free(ir: GrammarIR) -> ContextFree:
    """The grammar ``ir``; ``ConstraintError`` when its start derives no string."""
    terminals = {
        name
        for name, terminal in ir.terminals.items()
        if terminal.literal or not _no_string(terminal.ast())
    }
    try:  # (the reduced grammar's check, without building the terminals' automata)
        productive_rules(((r.lhs, r.rhs) for r in ir.rules), terminals, ir.start)
    except ConstraintError:
        message = f"rule {ir.start!r} derives no string: {_EMPTY}"
        raise ConstraintError("grammar", message) from None
    return ContextFree(ir)


def _no_string(node: Node) -> bool:
    """Whether the AST's language is empty: syntactically where that is exact
    (no lookaround), else by the terms of a lazy automaton (``TermTable``:
    a lookaround's product is searched for a string until one is found, not
    built whole; past the default bound the backend's own compile meets
    the limit)."""
    if not has_lookaround(node):
        return is_void(node)
    try:
        return not has_string(node)
    except CompileLimitExceeded as e:
        if is_budget_error(e):
            raise
        return False
    except RecursionError:  # (nested too deeply: the backend's compile says so)
        return False
