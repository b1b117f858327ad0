"""Constraints → XGrammar's EBNF (its native grammar format).

XGrammar matches characters with a pushdown automaton (an Earley parser
over character-level rules): it has no lexer, so a grammar's terminals are
plain rules and any tokenization of the text is followed.

* ``Regex``, ``Choice`` and regular JSON schemas: the core's regex AST
  (``Regular.node``) printed as EBNF (``node_ebnf``) — no second regex
  dialect is involved, so the language is the core's by construction.
* ``Grammar``: the core's ``GrammarIR`` as EBNF rules (``grammar_ebnf``),
  every terminal a rule printed from its AST (a shortest-match terminal from
  its shortest-match automaton), and the ``%ignore``d terminals written out:
  a run of them at the start and after every terminal, printed from the
  run's minimal automaton (``ignored_run``), so the parser reads a run one
  way only.
"""

from __future__ import annotations

from constrain_api import CompileLimitExceeded, GrammarIR, UnsupportedConstraint
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


def node_ebnf(node: Node) -> str:
    """An EBNF expression with exactly the language of ``node``."""
    if isinstance(node, Empty):
        return '""'
    if isinstance(node, Literal):
        return '"' + "".join(_char(c) for c in node.text) + '"'
    if isinstance(node, CharSet):
        if not node.ranges:
            return NOTHING
        return "[" + "".join(_range(lo, hi) for lo, hi in node.ranges) + "]"
    if isinstance(node, Seq):
        return "(" + " ".join(node_ebnf(p) for p in node.parts) + ")" if node.parts else '""'
    if isinstance(node, Alt):
        return "(" + " | ".join(node_ebnf(o) for o in node.options) + ")"
    if isinstance(node, Repeat):
        return _repeat(node_ebnf(node.node), node.min, node.max)
    raise UnsupportedConstraint(NAME, "lookaround", "no EBNF spelling for an intersection")


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


def grammar_ebnf(ir: GrammarIR) -> str:
    """``ir`` as EBNF rules with root ``root`` (see the module docstring)."""
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
    nodes = {name: _terminal_node(terminal) for name, terminal in ir.terminals.items()}
    for name, node in nodes.items():
        lines.append(f"{names[name]} ::= {node_ebnf(node)}")
    if ir.ignore:
        run = ignored_run([nodes[n] for n in ir.ignore])
        lines.append("ign ::= " + (run or "(" + " | ".join(names[n] for n in ir.ignore) + ")*"))
    return "\n".join(lines) + "\n"


def _terminal_node(terminal) -> Node:
    """A terminal's AST (a shortest-match terminal's from its automaton)."""
    return dfa_to_node(terminal.dfa()) if terminal.shortest else terminal.ast()


def ignored_run(terminals: list[Node]) -> str | None:
    """The EBNF of a run of the ignored ``terminals`` (any number, in any
    order), printed from the run's minimal automaton: for lark's ``WS``
    (``[ \\t\\f\\r\\n]+``) one starred character class; ``None`` when that
    automaton is too big to build or print (the caller then writes the rule
    ``(t1 | t2 | ...)*``). That rule has the same language, but XGrammar's
    Earley parser follows every way of cutting a run into pieces (2^(n-1)
    for n spaces of ``WS``): with Llama-3's vocabulary its ``accept_token``
    took up to 200 ms a token in whitespace runs, 7.6 s along 768 tokens of
    DOMINO's JSON that this spelling reads in 3 ms."""
    try:
        run = ByteDFA.from_node(repeat(alt(*terminals), 0, None))
        return node_ebnf(dfa_to_node(run))
    except CompileLimitExceeded:
        return None
