"""Grammars by iterative parsing (Willard & Louf, §4): an LALR(1) parser
chooses the terminals that may come next, and each terminal is an FSM
indexed over the vocabulary.

Compile: the grammar goes through the core (``ReducedGrammar``, then
the core's LALR(1) tables via ``lalr_table``); each
terminal gets its own outlines-core index (cached per pattern, so grammars
sharing ``ESCAPED_STRING`` share its index). The paper indexes, per parser
state, the union of the FSMs of the terminals it accepts; the union of
automata is a union of their allowed-token sets, so a parser state's mask is
the OR of its terminals' rows — cached per set, never a second index.

Decode: the state is a set of *items* ``(parser stack, terminal, index
state)``: the text so far, lexed as terminals fed to the parser, then part
of ``terminal``. A token advances each item inside its terminal. When an
item's terminal can end there (a final index state), the terminal is fed to
the parser (``%ignore``d ones leave the stack as it is) and the *next*
token may start any terminal the new stack expects: a set keeps every
lexing (``if`` the keyword or the start of ``iffy``), so the parser state
is never guessed.

What the paper's design cannot do: a token never spans two terminals — a
terminal ends only between tokens. ``{"`` after nothing, ``",`` inside an
object, ``[[`` are missing wherever the oracle allows them (*bridge
tokens*); the masks never allow a token the oracle forbids. The gap is
measured by the tests and the conformance suite, and declared:
``Capabilities.exact`` is empty.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from constrain_api import (
    ByteDFA,
    CompileLimitExceeded,
    LRTable,
    ReducedGrammar,
    Stack,
    StateChecker,
    Terminal,
    UnsupportedConstraint,
)
from constrain_api.automata import dfa_to_regex, to_regex

Item = tuple[Stack, int, int]  # (parser stack, terminal index, outlines-core index state)


def terminal_pattern(terminal: Terminal, dfa: ByteDFA) -> str:
    """The terminal's regex in the core's portable dialect, for outlines-core.

    Its own pattern printed back when that is exact; the automaton's regex
    (by state elimination) when it is not: shortest-match terminals
    (``/".*?"/``) and lookarounds the core resolved as intersections
    (``ESCAPED_STRING``'s ``(?<!\\\\)``) have no direct spelling.
    """
    if not terminal.shortest:
        try:
            return to_regex(terminal.ast())
        except UnsupportedConstraint:
            pass
    return dfa_to_regex(dfa)


def grammar_terminals(grammar: ReducedGrammar) -> dict[str, str]:
    """Each terminal of the reduced grammar → its portable pattern (a
    terminal must consume a byte, or the parser could feed it forever)."""
    grammar.refuse_nullable_terminals(
        "a terminal must consume a byte, or the parser could feed it forever"
    )
    patterns: dict[str, str] = {}
    for name in grammar.names:
        try:
            patterns[name] = terminal_pattern(grammar.terminals[name], grammar.dfas[name])
        except CompileLimitExceeded as e:
            raise CompileLimitExceeded(
                e.limit, e.bound, e.value, f"the regex of terminal {name}"
            ) from e
    return patterns


class ParseState:
    """A checker state: the items, their ``(terminal, index state)`` pairs
    (which decide the mask) and whether the text so far is a sentence."""

    __slots__ = ("accepting", "items", "scan")

    def __init__(self, items: frozenset[Item], accepting: bool):
        self.items = items
        self.scan = frozenset((t, s) for _, t, s in items)
        self.accepting = accepting


class GrammarIndex:
    """The compiled grammar: LR tables, one index per terminal, and the
    masks of the ``(terminal, index state)`` sets met (an LRU)."""

    def __init__(
        self,
        lr: LRTable,
        names: list[str],
        ignore: frozenset[str],
        terminals: list,  # IndexRows, one per name
        empty_row: np.ndarray,
        mask_cache: int,
    ):
        self.lr = lr
        self.names = names
        self.terminals = terminals
        self._number = {n: i for i, n in enumerate(names)}
        self._ignore = frozenset(self._number[n] for n in ignore)
        self._initial = [t.index.get_initial_state() for t in terminals]
        self._next: list[Callable[[int, int], int | None]] = [
            t.index.get_next_state for t in terminals
        ]
        self._final: list[Callable[[int], bool]] = [t.index.is_final_state for t in terminals]
        self._empty_row = empty_row
        self._masks: OrderedDict[frozenset, np.ndarray] = OrderedDict()
        self._mask_cache = mask_cache
        self._boundaries: dict[Stack, tuple[Item, ...]] = {}
        self._lock = threading.Lock()
        self.start = ParseState(frozenset(self.boundary(lr.start)), lr.accepts_end(lr.start))

    def boundary(self, stack: Stack) -> tuple[Item, ...]:
        """The items that start a terminal after ``stack``: every terminal the
        parser expects, and the ignored ones."""
        known = self._boundaries.get(stack)
        if known is None:
            number, initial = self._number, self._initial
            ts = {number[n] for n in self.lr.expected(stack)} | self._ignore
            known = tuple((stack, t, initial[t]) for t in sorted(ts))
            if len(self._boundaries) > 100_000:
                self._boundaries.clear()
            self._boundaries[stack] = known
        return known

    def advance(self, state: ParseState, token_id: int) -> ParseState | None:
        """The state after a token with bytes, or ``None`` if no item takes it."""
        nxt, final, lr, ignore, names = self._next, self._final, self.lr, self._ignore, self.names
        items: set[Item] = set()
        accepting = False
        for stack, t, s in state.items:
            n = nxt[t](s, token_id)
            if n is None:
                continue
            items.add((stack, t, n))
            if final[t](n):  # the terminal may end here: the next token may start another
                after = stack if t in ignore else lr.feed(stack, names[t])
                if after is not None:
                    items.update(self.boundary(after))
                    accepting = accepting or lr.accepts_end(after)
        if not items and not accepting:
            return None
        return ParseState(frozenset(items), accepting)

    def row(self, state: ParseState) -> np.ndarray:
        """The packed row of normal tokens ``state`` allows (cached per scan set)."""
        key = state.scan
        masks = self._masks
        row = masks.get(key)
        if row is not None:
            return row
        if key:
            rows = [self.terminals[t].row(s) for t, s in key]
            row = rows[0] if len(rows) == 1 else np.bitwise_or.reduce(rows)
        else:  # a complete sentence nothing can extend: only empty tokens
            row = self._empty_row
        with self._lock:
            masks[key] = row
            while len(masks) > self._mask_cache:
                masks.popitem(last=False)
        return row


class GrammarChecker(StateChecker[ParseState]):
    """The state is a :class:`ParseState`."""

    def __init__(self, compiled):
        self._grammar: GrammarIndex = compiled.grammar
        self._empty = compiled.empty_token_ids
        super().__init__(compiled)

    def start_state(self) -> ParseState:
        return self._grammar.start

    def advance(self, state: ParseState, token_id: int) -> ParseState | None:
        if token_id in self._empty:
            return state
        return self._grammar.advance(state, token_id)

    def fill_state(self, state: ParseState, row: np.ndarray) -> None:
        row[:] = self._grammar.row(state)

    def state_accepting(self, state: ParseState) -> bool:
        return state.accepting

    def state_finished(self, state: ParseState) -> bool:
        return not self._grammar.row(state).any()
