"""The two forms every constraint lowers to: a regular language or a context-free grammar.

* :class:`Regular`: a regex AST (``parse_regex``'s node types) or, for
  ``where`` predicates, a byte DFA; either way its minimal byte DFA on
  request (:meth:`Regular.dfa`).
* :class:`ContextFree`: the grammar IR (lark's loader output for a ``Grammar``,
  the JSON-schema lowering's own for a schema), and on request
  its :class:`ReducedGrammar` — the one reading of a grammar every grammar
  backend shares: terminals as byte DFAs (those with no string dropped),
  the rules that derive some string and are reachable from ``start``, the
  terminals those rules and ``%ignore`` use. A grammar whose ``start``
  derives no string is malformed (``ConstraintError``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from ..automata import DEFAULT_MAX_STATES, ByteDFA, LazyDFA, Node, dfa_to_node
from ..errors import ConstraintError, UnsupportedConstraint
from ..first_follow import deriving
from ..grammar import GrammarIR, Rule, Terminal

RuleText = tuple[str, tuple[str, ...]]  # (lhs, rhs symbol names)


@dataclass(frozen=True, eq=False)
class Regular:
    """A regular language over bytes.

    ``node``: its regex AST, when it came from a regex, a choice or a regular
    JSON schema (``None`` for a predicate); ``build``: how its DFA is built
    (the fastest construction for where it came from)."""

    node: Node | None
    build: Callable[[int], ByteDFA] = field(repr=False)

    @classmethod
    def from_node(cls, node: Node) -> Regular:
        """The language of a regex AST."""
        return cls(node, lambda max_states: ByteDFA.from_node(node, max_states=max_states))

    def dfa(self, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
        """The minimal byte DFA (built anew: ``lower``'s cache keeps no
        automaton); ``CompileLimitExceeded`` past ``max_states``."""
        return self.build(max_states)

    def regex_node(self, *, max_states: int = DEFAULT_MAX_STATES) -> Node:
        """The AST: ``node``, or the DFA's by state elimination."""
        return self.node if self.node is not None else dfa_to_node(self.dfa(max_states=max_states))


@dataclass(frozen=True)
class ReducedGrammar:
    """A grammar in the shape grammar backends compile (see the module docstring).

    ``names``: the terminals used (by the rules or ``%ignore``), in the IR's
    order; ``dfas``: their byte DFAs, by name (``LazyDFA``s where the
    reduction was asked for lazy automata); ``terminals``: their IR
    entries; ``rules``: ``(lhs, rhs)`` pairs, each deriving some string and
    reachable from ``start``; ``ignore``: the used names that are ``%ignore``d;
    ``nullable``: the used names whose DFA accepts the empty string."""

    start: str
    names: tuple[str, ...]
    dfas: dict[str, ByteDFA | LazyDFA]
    terminals: dict[str, Terminal]
    rules: tuple[RuleText, ...]
    ignore: frozenset[str]
    nullable: frozenset[str]

    def refuse_nullable_terminals(self, why: str) -> None:
        """Raise ``UnsupportedConstraint`` naming the first terminal that
        matches the empty string (for backends whose scanners need a byte)."""
        for name in self.names:
            if name in self.nullable:
                raise UnsupportedConstraint(
                    "grammar", f"terminal {name} matching the empty string", why
                )

    def as_ir(self) -> GrammarIR:
        """The reduced grammar as a ``GrammarIR`` (same language as the original)."""
        return GrammarIR(
            self.start,
            tuple(Rule(lhs, rhs) for lhs, rhs in self.rules),
            {name: self.terminals[name] for name in self.names},
            tuple(name for name in self.names if name in self.ignore),
        )


@dataclass(frozen=True)
class ContextFree:
    """A grammar: its ``ir`` (unreduced)."""

    ir: GrammarIR

    def reduce(self, *, max_states: int = DEFAULT_MAX_STATES, lazy: bool = False) -> ReducedGrammar:
        """The reduced grammar, terminals' DFAs bounded by ``max_states``
        (built anew: ``lower``'s cache keeps no automaton); ``lazy``: the
        terminals as automata whose states are found as a walk asks for
        them (``LazyDFA``, or a ``ByteDFA`` already built)."""
        return reduce_grammar(self.ir, max_states=max_states, lazy=lazy)


def reduce_grammar(
    ir: GrammarIR, *, max_states: int = DEFAULT_MAX_STATES, lazy: bool = False
) -> ReducedGrammar:
    """``ir`` reduced (see :class:`ReducedGrammar`)."""
    automata = ir.terminal_dfas(max_states=max_states, lazy=lazy)
    dfas = {name: dfa for name, dfa in automata.items() if not dfa.is_empty()}
    rules = reachable_rules(
        productive_rules(((r.lhs, r.rhs) for r in ir.rules), dfas, ir.start), ir.start
    )
    used = {s for _, rhs in rules for s in rhs if s in dfas} | {n for n in ir.ignore if n in dfas}
    names = tuple(n for n in dfas if n in used)
    return ReducedGrammar(
        ir.start,
        names,
        {n: dfas[n] for n in names},
        {n: ir.terminals[n] for n in names},
        tuple(rules),
        frozenset(n for n in ir.ignore if n in used),
        frozenset(n for n in names if dfas[n].accepts_empty()),
    )


def productive_rules(
    rules: Iterable[RuleText], terminals: Collection[str], start: str
) -> list[RuleText]:
    """The rules whose symbols all derive some string of ``terminals``
    (terminals missing from ``terminals`` derive none). Raises
    ``ConstraintError`` when ``start`` derives no string at all (linear in
    the rules: ``first_follow.deriving``)."""
    rules = list(rules)
    if not isinstance(terminals, set | frozenset | dict):
        terminals = set(terminals)
    productive = deriving(rules, terminals)
    if start not in productive:
        raise ConstraintError("grammar", f"rule {start!r} derives no string")
    return [(lhs, rhs) for lhs, rhs in rules if all(s in terminals or s in productive for s in rhs)]


def reachable_rules(rules: Iterable[RuleText], start: str) -> list[RuleText]:
    """The rules of the non-terminals ``start`` reaches (order kept)."""
    rules = list(rules)
    by_lhs: dict[str, list[tuple[str, ...]]] = {}
    for lhs, rhs in rules:
        by_lhs.setdefault(lhs, []).append(rhs)
    seen, todo = {start}, [start]
    while todo:
        for rhs in by_lhs.get(todo.pop(), ()):
            for s in rhs:
                if s in by_lhs and s not in seen:
                    seen.add(s)
                    todo.append(s)
    return [(lhs, rhs) for lhs, rhs in rules if lhs in seen]
