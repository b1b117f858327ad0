"""Constraints → XGrammar's EBNF (its native grammar format).

XGrammar matches characters with a pushdown automaton (an Earley parser
over character-level rules): it has no lexer, so a grammar's terminals are
plain rules and any tokenization of the text is followed.

* ``Regex``, ``Choice`` and regular JSON schemas: the core's minimal
  automaton printed as right-linear rules, one per state (``dfa_rules``);
  past ``max_states`` states (the backend's ``max_rule_states``), the
  core's regex AST printed as one expression (``node_ebnf``). Either way no second regex dialect is
  involved, so the language is the core's by construction.
* ``Grammar``: the core's ``GrammarIR`` as EBNF rules (``grammar_ebnf``),
  every terminal printed the same way from its automaton (or AST), and the
  ``%ignore``d terminals written out: a run of them at the start and after
  every terminal, printed from the run's minimal automaton, so the parser
  reads a run one way only.

Why rules per state: XGrammar decides most tokens once, at compile time,
for each place in a rule; a token that runs past the end of the rule it
starts in is checked again at every step, against the stack. A regex's
repetition is a rule of its own that ends after each repeated item, so in
a JSON string most of Llama-3's vocabulary is checked at every step (40-75
ms a step); right-linear rules end only where the language does, so
tokens are decided at compile time (a few µs a step), for a compile that
scans the vocabulary once per state.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable

from constrain_api import CompileLimitExceeded, GrammarIR, Terminal, UnsupportedConstraint
from constrain_api.automata import (
    Alt,
    ByteDFA,
    CharSet,
    Empty,
    Literal,
    Node,
    Repeat,
    Seq,
    alt,
    char_edges,
    dfa_to_node,
    repeat,
)

NAME = "xgrammar"
#: The largest repetition count written as one bound: past 128, XGrammar's
#: masks allow too much (``[^"]{0,129}`` let 921 Llama-3 tokens with ``"``
#: through, ``{0,128}`` is right), so larger counts become a sequence of
#: repetitions of at most this many.
MAX_COUNT = 128
#: The empty language: a class of every character, negated.
NOTHING = "[^\\U00000000-\\U0010FFFF]"
#: The most automaton states printed as rules by default (the backend's
#: ``max_rule_states``): XGrammar's compile scans the vocabulary once per
#: state (with Llama-3's, up to a few ms a state); a bigger automaton is
#: printed from its regex AST.
DEFAULT_MAX_RULE_STATES = 4096


def node_ebnf(
    node: Node,
    rules: list[str] | None = None,
    name: str = "x",
    max_states: int = DEFAULT_MAX_RULE_STATES,
) -> str:
    """An EBNF expression with exactly the language of ``node``. An
    intersection or difference (a lookaround's, a length-bounded pattern's)
    has no expression: with ``rules`` given, its minimal automaton (up to
    ``max_states`` states, else ``CompileLimitExceeded``) is appended to them
    as ``dfa_rules`` named ``name_iK`` and the expression names that rule;
    without, it raises ``UnsupportedConstraint``."""

    def ebnf(n: Node) -> str:
        if isinstance(n, Empty):
            return '""'
        if isinstance(n, Literal):
            return '"' + "".join(_char(c) for c in n.text) + '"'
        if isinstance(n, CharSet):
            if not n.ranges:
                return NOTHING
            return "[" + "".join(_range(lo, hi) for lo, hi in n.ranges) + "]"
        if isinstance(n, Seq):
            return "(" + " ".join(ebnf(p) for p in n.parts) + ")" if n.parts else '""'
        if isinstance(n, Alt):
            return "(" + " | ".join(ebnf(o) for o in n.options) + ")"
        if isinstance(n, Repeat):
            return _repeat(ebnf(n.node), n.min, n.max)
        if rules is None:
            raise UnsupportedConstraint(NAME, "lookaround", "no EBNF spelling for an intersection")
        rule = f"{name}_i{len(rules)}"  # (rules only grow: a fresh name)
        rules.extend(dfa_rules(ByteDFA.from_node(n, max_states=max_states).minimize(), rule))
        return rule

    return ebnf(node)


def _repeat(item: str, lo: int, hi: int | None) -> str:
    """``item{lo,hi}`` with no count above ``MAX_COUNT``: ``X{a,b}`` is
    ``X{a1,b1} X{a2,b2}...`` with ``a1+a2+... = a``, ``b1+b2+... = b`` (the same
    strings: every total count in ``[a, b]`` is a sum of counts in the parts)."""
    parts = []
    while lo > MAX_COUNT or (hi is not None and hi > MAX_COUNT):
        take = min(lo, MAX_COUNT)
        parts.append(f"({item}){_quantifier(take, MAX_COUNT)}")
        lo -= take
        hi = None if hi is None else hi - MAX_COUNT
    parts.append(f"({item}){_quantifier(lo, hi)}")
    return parts[0] if len(parts) == 1 else "(" + " ".join(parts) + ")"


def _quantifier(lo: int, hi: int | None) -> str:
    if (lo, hi) == (0, None):
        return "*"
    if (lo, hi) == (1, None):
        return "+"
    if (lo, hi) == (0, 1):
        return "?"
    return f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}"


def _char(c: str) -> str:
    """A character in a string literal: alphanumerics raw, the rest escaped."""
    return c if c.isascii() and c.isalnum() else f"\\U{ord(c):08X}"


def _range(lo: int, hi: int) -> str:
    return f"\\U{lo:08X}" if lo == hi else f"\\U{lo:08X}-\\U{hi:08X}"


def grammar_ebnf(ir: GrammarIR, max_states: int = DEFAULT_MAX_RULE_STATES) -> str:
    """``ir`` as EBNF rules with root ``root`` (see the module docstring;
    ``max_states``: the most states of a terminal printed as rules)."""
    names = {lhs: f"r{i}" for i, lhs in enumerate(ir.nonterminals)}
    names.update({t: f"t{i}" for i, t in enumerate(ir.terminals)})
    skip = " ign" if ir.ignore else ""
    lines = [f"root ::={skip} {names[ir.start]}"]
    for lhs in ir.nonterminals:
        options = []
        for rule in ir.rules_for(lhs):
            parts = [names[s] + (skip if ir.is_terminal(s) else "") for s in rule.rhs]
            options.append(" ".join(parts) if parts else '""')
        lines.append(f"{names[lhs]} ::= " + " | ".join(options))
    for name, terminal in ir.terminals.items():
        lines += _terminal_rules(terminal, names[name], max_states)
    if ir.ignore:
        lines += _ignored_run_rules(ir, names, max_states)
    return "\n".join(lines) + "\n"


def dfa_rules(dfa: ByteDFA, name: str) -> list[str]:
    """Right-linear rules with ``dfa``'s language (valid UTF-8 strings) as
    rule ``name``: one rule per state met at a character boundary, the start
    state's named ``name``, each other state's ``name_qK``: ``""`` where the
    state accepts, and a character class followed by the next state's rule
    for each state its characters lead to."""
    rule = {dfa.start: name}
    order = [dfa.start]
    lines = []
    for state in order:  # (grows as new states are met)
        options = ['""'] if dfa.accept[state] else []
        for target, ranges in char_edges(dfa, state).items():
            if target not in rule:
                rule[target] = f"{name}_q{len(order)}"
                order.append(target)
            options.append(node_ebnf(CharSet(tuple(ranges))) + " " + rule[target])
        lines.append(f"{rule[state]} ::= " + (" | ".join(options) if options else NOTHING))
    return lines


def automaton_rules(
    dfa: Callable[..., ByteDFA], node: Callable[[], Node], name: str, max_states: int
) -> list[str]:
    """Rule ``name``: ``dfa_rules`` of the automaton ``dfa(max_states=...)``
    builds, or, when it has over ``max_states`` states (0: always), one
    expression printed from the AST ``node()`` (the same language; an
    intersection in it as the rules of its own automaton, up to
    ``max_states`` states: with 0, refused)."""
    automaton = None
    if max_states > 0:
        with contextlib.suppress(CompileLimitExceeded):  # (too many states)
            automaton = dfa(max_states=max_states)
    if automaton is None:
        parts: list[str] | None = [] if max_states > 0 else None  # (an intersection's rules)
        return [f"{name} ::= {node_ebnf(node(), parts, name, max_states)}", *(parts or ())]
    return dfa_rules(automaton.minimize(), name)


def _terminal_rules(terminal: Terminal, name: str, max_states: int) -> list[str]:
    """A grammar terminal as rule ``name``."""
    return automaton_rules(terminal.dfa, lambda: _terminal_ast(terminal), name, max_states)


def _terminal_ast(terminal: Terminal) -> Node:
    """A terminal's AST (a shortest-match terminal's from its automaton)."""
    return dfa_to_node(terminal.dfa()) if terminal.shortest else terminal.ast()


def _ignored_run_rules(ir: GrammarIR, names: dict[str, str], max_states: int) -> list[str]:
    """Rule ``ign``: a run of ``ir``'s ignored terminals (any number, in any
    order), printed from the run's minimal automaton, as rules or (past
    ``max_states``) as one expression: for lark's ``WS``
    (``[ \\t\\f\\r\\n]+``) one state looping on a class, or that class
    starred. The rule ``(WS)*`` has the same language, but XGrammar's Earley
    parser follows every way of cutting a run into pieces (2^(n-1) for n
    spaces of ``WS``): with Llama-3's vocabulary its ``accept_token`` took up
    to 200 ms a token in whitespace runs, 7.6 s along 768 tokens of DOMINO's
    JSON that a single class reads in 3 ms. Only when the run's automaton is
    too big to build or print, the rule ``(t1 | t2 | ...)*`` over the
    terminals' rules (``names``)."""
    run = repeat(alt(*(_terminal_ast(ir.terminals[n]) for n in ir.ignore)), 0, None)
    try:
        return automaton_rules(
            functools.partial(ByteDFA.from_node, run),
            lambda: dfa_to_node(ByteDFA.from_node(run)),  # (a run read one way as well)
            "ign",
            max_states,
        )
    except CompileLimitExceeded:
        return ["ign ::= (" + " | ".join(names[n] for n in ir.ignore) + ")*"]
