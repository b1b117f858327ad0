"""The character scanner (DOMINO §3.1): the union of the terminals' byte
automata with a boundary state that loops back (Lemma 3.1).

A scanner *position* is ``(terminal, dfa_state)``: inside that terminal's
automaton, having read part of one of its strings; ``BOUNDARY`` is the
position before the first byte. From a position, a byte either continues the
terminal, or (when the terminal could end here) completes it and starts any
terminal whose automaton takes that byte. Which continuation is right is the
parser's business, not the scanner's: the scanner keeps them all.

``ScannerGrammar`` is a grammar in this shape: the terminals as trimmed
byte DFAs (every state can still reach acceptance, so a live state is a
viable prefix), the context-free rules over them, the ``%ignore``d ones.
The automata are ``LazyDFA``s where they come from regexes: a state's
transitions are found when a walk first reads them, so a compilation pays
only for the states its decoding visits (not minimized: two positions may
behave alike, which costs a tree, never a mask).
"""

from __future__ import annotations

from dataclasses import dataclass

from constrain_api import ByteDFA, LazyDFA, ReducedGrammar, first_and_follow
from constrain_api.automata import Node

#: The position before any byte: the next byte starts a terminal.
BOUNDARY = (-1, 0)

REGEX_TERMINAL = "REGEX"


@dataclass
class ScannerGrammar:
    """Terminals (names, DFAs), rules ``(lhs, rhs)``, ignored terminal
    indices, start; ``sources``: each terminal's pattern (and whether it
    matches shortest), where the grammar came from patterns: text that
    names the terminal's language, cheaper to digest than its automaton."""

    names: list[str]
    dfas: list[ByteDFA | LazyDFA]
    rules: list[tuple[str, tuple[str, ...]]]
    ignore: frozenset[int]
    start: str
    sources: list[tuple[str, bool]] | None = None

    def __post_init__(self) -> None:
        self.rows = [d.rows if isinstance(d, LazyDFA) else _Rows(d) for d in self.dfas]
        #: ``runs_of[t](q)``: state ``q``'s row as ``(lo, hi, target)`` ranges
        self.runs_of = [d.runs_of for d in self.dfas]
        self.accept = [d.accept for d in self.dfas]
        self.starts = [d.start for d in self.dfas]
        self.index = {name: i for i, name in enumerate(self.names)}
        #: the terminals the parser shifts when they complete: all but those
        #: only ignored (one that is ignored and used by the rules is read
        #: both ways, as the core's grammar language reads it)
        in_rules = {symbol for _, rhs in self.rules for symbol in rhs}
        self.shifted = frozenset(
            t for t, name in enumerate(self.names) if t not in self.ignore or name in in_rules
        )
        self.follows, self.initial = _adjacency(self)
        #: per byte, the terminals that byte can start and their state after it
        #: (from each terminal's start row's runs: most are a byte or two)
        self.first: list[list[tuple[int, int]]] = [[] for _ in range(256)]
        #: the same as ``(lo, hi, terminal, state)`` byte ranges
        self.start_runs: list[tuple[int, int, int, int]] = []
        for t, dfa in enumerate(self.dfas):
            if dfa.num_states and self.starts[t] >= 0:
                for lo, hi, q in self.runs_of[t](self.starts[t]):
                    self.start_runs.append((lo, hi, t, q))
                    for b in range(lo, hi + 1):
                        self.first[b].append((t, q))

    @property
    def positions(self) -> list[tuple[int, int]]:
        """Every scanner position: ``BOUNDARY`` and each terminal's states
        (a lazy automaton's all found first)."""
        for d in self.dfas:
            if isinstance(d, LazyDFA):
                d.complete()
        return [BOUNDARY] + [(t, q) for t, d in enumerate(self.dfas) for q in range(d.num_states)]

    @classmethod
    def from_node(cls, node: Node, *, max_states: int) -> ScannerGrammar:
        """A regular language (a regex AST) as a one-terminal grammar with a
        lazy automaton (the empty string, if in the language, as an empty
        rule: terminals never match it)."""
        dfa = LazyDFA(node, max_states=max_states, without_empty=True)
        rules = [("start", (REGEX_TERMINAL,))]
        if dfa.nullable:
            rules.append(("start", ()))
            if dfa.is_empty():  # the empty string only
                return cls([], [], [("start", ())], frozenset(), "start")
        return cls([REGEX_TERMINAL], [dfa], rules, frozenset(), "start")

    @classmethod
    def from_dfa(cls, dfa: ByteDFA) -> ScannerGrammar:
        """A regular language as a one-terminal grammar (the empty string,
        if in the language, as an empty rule: terminals never match it)."""
        if dfa.is_empty():  # no string at all: a terminal that never starts
            return cls(
                [REGEX_TERMINAL], [dfa], [("start", (REGEX_TERMINAL,))], frozenset(), "start"
            )
        rules = [("start", (REGEX_TERMINAL,))]
        if dfa.accepts_empty():
            rules.append(("start", ()))
            dfa = dfa.difference(ByteDFA.literal(b""))
            if dfa.is_empty():  # the empty string only
                return cls([], [], [("start", ())], frozenset(), "start")
        return cls([REGEX_TERMINAL], [dfa], rules, frozenset(), "start")

    @classmethod
    def from_reduced(cls, grammar: ReducedGrammar) -> ScannerGrammar:
        """The scanner of a reduced grammar (every rule derives some string, so
        every viable parser stack can be completed); its terminals must each
        consume a byte (``ReducedGrammar.refuse_nullable_terminals``)."""
        grammar.refuse_nullable_terminals("the scanner needs every terminal to consume a byte")
        names = list(grammar.names)
        ignore = frozenset(names.index(n) for n in grammar.ignore)
        terminals = grammar.terminals
        return cls(
            names,
            [grammar.dfas[n] for n in names],
            list(grammar.rules),
            ignore,
            grammar.start,
            [(terminals[n].pattern, terminals[n].shortest) for n in names],
        )


class _Rows(dict):
    """A DFA's transition rows as tuples (``rows[state][byte]``), each
    converted on first use: a walk visits few of a large terminal's states."""

    __slots__ = ("_table",)

    def __init__(self, dfa: ByteDFA):
        super().__init__()
        self._table = dfa.table

    def __missing__(self, state: int) -> tuple[int, ...]:
        row = self[state] = tuple(self._table[state].tolist())  # (untracked by the collector)
        return row


def _adjacency(g: ScannerGrammar) -> tuple[list[frozenset[int]], frozenset[int]]:
    """Which terminals can come right after each terminal in some sentence
    (``%ignore``d ones aside), and which can come first: the FIRST and FOLLOW
    sets of textbook parsing, over terminals (``first_and_follow``). The
    subterminal trees only record paths these allow; the parser would reject
    the others anyway, and without this a name terminal splits into names at
    every byte."""
    first, follows = first_and_follow(g.rules, g.names, g.start)
    return [_indices(bits) for bits in follows], _indices(first)


def _indices(bits: int) -> frozenset[int]:
    """The set bits of ``bits``."""
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return frozenset(out)
