"""Backend ``fst``: the method of Koo et al. (*Automata-based constraints for
language model decoding*) on pynini/OpenFst.

Constrained decoding as standard automata operations: the constraint is a
byte acceptor built from the core's regex AST with pynini's union,
concatenation and closure; the vocabulary is a detokenizing transducer T_V
(token → bytes, trie-compacted, built once per vocabulary); their
composition, projected on tokens and epsilon-free (already deterministic),
is a token-level DFA whose arcs out of a state are exactly the allowed tokens.
Masks are packed rows per state, built on first use and cached.

Wide character classes use the paper's wildcard terminals (``wildcards.py``):
tokens made only of a class's characters are read as group labels at the
states where the class acts uniformly, so such states get a few group arcs
instead of one arc per token. Not built yet: grammars through pushdown
automata.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

import numpy as np

from constrain_api import (
    BaseBackend,
    BaseCompiled,
    Capabilities,
    CompileLimitExceeded,
    CompileStats,
    StateChecker,
    Vocabulary,
)
from constrain_api.automata import CharSet, regular_node

from .automata import prefix_acceptor, token_automaton
from .wildcards import (
    MAX_CLASSES,
    TokenText,
    Wildcards,
    add_wildcard_arcs,
    byte_table,
    candidate_classes,
    closed_states,
    token_text,
    wild_chars,
    wildcard_detokenizer,
)

KINDS = frozenset({"regex", "choice", "json_schema"})
#: A byte state with at least this many outgoing byte values counts as "wide".
WIDE = 128
#: A class becomes a wildcard when at least 1/WILD_SHARE of the vocabulary is wild for it.
WILD_SHARE = 16
#: Detokenizers kept per backend (each one per vocabulary and set of wildcard classes).
KEEP_DETOKENIZERS = 8


class FSTBackend(BaseBackend):
    """Koo et al.'s composition with a detokenizing transducer (regular constraints).

    Options: ``wildcards`` (default True) turns on the wildcard terminals;
    ``max_states`` bounds the constraint's byte automaton and the token
    automaton (``CompileLimitExceeded``); ``max_composed_arcs`` (default
    600,000) bounds the estimated size of the composition — tokens spelled
    byte by byte from wide states — which OpenFst cannot interrupt.
    """

    name = "fst"
    capabilities = Capabilities(
        kinds=KINDS,
        exact=KINDS,
        notes="regular constraints, with wildcard terminals for wide classes; no grammars yet",
    )

    def __init__(
        self,
        max_states: int = 100_000,
        max_composed_arcs: int = 600_000,
        wildcards: bool = True,
    ):
        self.max_states = max_states
        self.max_composed_arcs = max_composed_arcs
        self.wildcards = wildcards
        self._detokenizers: OrderedDict[tuple, tuple[Any, Wildcards]] = OrderedDict()
        self._texts: dict[str, TokenText] = {}
        self._chars: dict[tuple[str, CharSet], np.ndarray] = {}
        self._lock = threading.Lock()

    def build(self, spec, vocab: Vocabulary, **options: Any) -> BaseCompiled:
        """Compose the constraint's acceptor with T_V and determinize."""
        max_states = options.pop("max_states", self.max_states)
        max_arcs = options.pop("max_composed_arcs", self.max_composed_arcs)
        use_wildcards = options.pop("wildcards", self.wildcards)
        if options:
            raise TypeError(f"unknown compile options for fst: {sorted(options)}")
        start = time.perf_counter()
        node = regular_node(spec, backend=self.name)
        acceptor = prefix_acceptor(node)
        if acceptor.num_states() > max_states:
            raise CompileLimitExceeded(
                "max_states", max_states, acceptor.num_states(), "the byte automaton"
            )
        table = byte_table(acceptor)
        classes = self._wildcard_classes(table, vocab) if use_wildcards else []
        detok, wild = self._detokenizer(vocab, classes)
        after_detok = time.perf_counter()
        closed_for = add_wildcard_arcs(acceptor, table, classes)
        wide = self._check_composition(table, closed_for, wild, vocab, max_arcs)
        automaton = token_automaton(detok, acceptor)
        if automaton.num_states() > max_states:
            raise CompileLimitExceeded(
                "max_states", max_states, automaton.num_states(), "the token automaton"
            )
        stats = CompileStats(
            time.perf_counter() - start,
            states=automaton.num_states(),
            extra={
                "detokenizer_seconds": after_detok - start,
                "byte_states": int(table.shape[0]),
                "wide_states": wide,
                "wildcard_classes": len(classes),
            },
        )
        return FSTCompiled(spec, vocab, stats, automaton, wild)

    def _wildcard_classes(self, table: np.ndarray, vocab: Vocabulary) -> list[CharSet]:
        """The classes worth a wildcard, chosen greedily: each removes, summed
        over the states where it acts uniformly, at least 1/``WILD_SHARE`` of
        the vocabulary in token arcs beyond what the classes before it remove
        (at most ``MAX_CLASSES``)."""
        options = []
        for charset in candidate_classes(table):
            count = int(np.count_nonzero(self._wild_chars(vocab, charset)))
            if count * WILD_SHARE < vocab.size:
                continue
            closed, nxt = closed_states(table, charset)
            saved = np.where(closed & (nxt >= 0), count, 0)
            if saved.any():
                options.append((charset, saved))
        chosen: list[CharSet] = []
        covered = np.zeros(table.shape[0], dtype=np.int64)
        while options and len(chosen) < MAX_CLASSES:
            gains = [int(np.maximum(saved - covered, 0).sum()) for _, saved in options]
            best = int(np.argmax(gains))
            if gains[best] * WILD_SHARE < vocab.size:
                break
            charset, saved = options.pop(best)
            chosen.append(charset)
            covered = np.maximum(covered, saved)
        return chosen

    def _check_composition(self, table, closed_for, wild: Wildcards, vocab, max_arcs) -> int:
        """Raise before OpenFst starts if wide states would spell too many
        tokens in bytes; returns the number of wide states."""
        wide_states = np.flatnonzero((table >= 0).sum(axis=1) >= WIDE)
        counts = [int(np.count_nonzero(c)) for c in wild.chars]
        estimate = 0
        for q in wide_states.tolist():
            covered = [counts[k] for k in range(len(counts)) if closed_for[q] >> k & 1]
            estimate += vocab.size - max(covered, default=0)
        if estimate > max_arcs:
            raise CompileLimitExceeded(
                "max_composed_arcs",
                max_arcs,
                estimate,
                f"{len(wide_states)} byte states accept almost any byte and no wildcard "
                "class covers them; the composition would hold about that many arcs",
            )
        return len(wide_states)

    def _token_text(self, vocab: Vocabulary) -> TokenText:
        with self._lock:
            text = self._texts.get(vocab.fingerprint)
            if text is None:
                text = self._texts[vocab.fingerprint] = token_text(vocab)
            return text

    def _wild_chars(self, vocab: Vocabulary, charset: CharSet) -> np.ndarray:
        key = (vocab.fingerprint, charset)
        chars = self._chars.get(key)
        if chars is None:
            chars = self._chars[key] = wild_chars(self._token_text(vocab), charset)
        return chars

    def _detokenizer(self, vocab: Vocabulary, classes=()) -> tuple[Any, Wildcards]:
        """T_V (with wildcard spellings for ``classes``), built once and kept."""
        key = (vocab.fingerprint, tuple(classes))
        with self._lock:
            found = self._detokenizers.get(key)
            if found is not None:
                self._detokenizers.move_to_end(key)
                return found
        chars = [self._wild_chars(vocab, c) for c in classes]
        found = wildcard_detokenizer(vocab, classes, chars)
        with self._lock:
            self._detokenizers[key] = found
            while len(self._detokenizers) > KEEP_DETOKENIZERS:
                self._detokenizers.popitem(last=False)
        return found


class FSTCompiled(BaseCompiled):
    """The token-level DFA; per-state transitions and packed rows, lazily.

    Arcs read either one token or a wildcard group (all tokens wild for class
    k with j characters); a token with no arc of its own follows its group's.
    """

    def __init__(self, spec, vocab, stats, automaton, wild: Wildcards):
        super().__init__(spec, vocab, stats)
        self.automaton = automaton
        self.wild = wild
        self._eos_label = {eos + 1 for eos in vocab.eos_ids}
        self._states: dict[int, tuple[dict[int, int], dict, np.ndarray, bool]] = {}

    def checker(self) -> FSTChecker:
        """A checker at the start state."""
        return FSTChecker(self)

    def state(self, s: int) -> tuple[dict[int, int], dict, np.ndarray, bool]:
        """(token → next, (class, characters) → next, packed row, EOS allowed)."""
        entry = self._states.get(s)
        if entry is None:
            moves: dict[int, int] = {}
            groups: dict[tuple[int, int], int] = {}
            accepting = False
            for arc in self.automaton.arcs(s):
                if arc.ilabel in self._eos_label:
                    accepting = True
                elif arc.ilabel > self.vocab.size:
                    groups[self.wild.groups[arc.ilabel]] = arc.nextstate
                else:
                    moves[arc.ilabel - 1] = arc.nextstate
            allowed = np.zeros(-(-self.vocab.size // 32) * 32, dtype=bool)
            allowed[np.fromiter(moves, dtype=np.int64, count=len(moves))] = True
            for k, chars in enumerate(self.wild.chars):
                lengths = [j for (c, j) in groups if c == k]
                if lengths:
                    table = np.zeros(int(chars.max()) + 1, dtype=bool)
                    table[lengths] = True
                    allowed[: self.vocab.size] |= table[chars]
            row = np.packbits(allowed, bitorder="little").view("<i4").astype(np.int32)
            entry = self._states[s] = (moves, groups, row, accepting)  # a benign race
        return entry

    def advance(self, s: int, token_id: int) -> int | None:
        """The next state on a token (its own arc, else its wildcard group's)."""
        moves, groups, _, _ = self.state(s)
        nxt = moves.get(token_id)
        if nxt is None and groups:
            for k, chars in enumerate(self.wild.chars):
                j = int(chars[token_id])
                if j and (k, j) in groups:
                    return groups[k, j]
        return nxt


class FSTChecker(StateChecker[int]):
    """The state is a state of the token-level DFA (an int; -1: empty language)."""

    def start_state(self) -> int:
        return self.compiled.automaton.start()

    def advance(self, state: int, token_id: int) -> int | None:
        if state < 0:
            return None
        return self.compiled.advance(state, token_id)

    def fill_state(self, state: int, row: np.ndarray) -> None:
        if state < 0:
            row[:] = 0
        else:
            row[:] = self.compiled.state(state)[2]

    def state_accepting(self, state: int) -> bool:
        return state >= 0 and self.compiled.state(state)[3]

    def state_finished(self, state: int) -> bool:
        if state < 0:
            return True
        moves, groups, _, _ = self.compiled.state(state)
        return not moves and not groups
