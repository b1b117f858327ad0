"""Backend ``fsm``: FSM indexing (Willard & Louf, the Outlines method) on outlines-core.

A regular constraint becomes a byte-level DFA, and every (DFA state, token)
pair is walked once, ahead of time: outlines-core's ``Index`` maps each state
to the tokens it allows and their next states. Decoding is then a lookup per
token, and a mask is a copy of the state's packed row, built on first use and
cached on the compiled artifact (shared by all its checkers).

What reaches outlines-core: the pattern is read by the core's parser
(``constrain_api.automata.parse_regex``, Python ``re`` semantics) and printed
back in the core's *portable dialect* (``to_regex``), so the two regex
dialects never disagree silently (``$``, nested classes, ``&&`` mean other
things in Rust's ``regex``); the automaton and the index over the vocabulary
are outlines-core's own. ``Choice`` is an alternation of literals;
``JsonSchema`` goes through the core's lowering and compiles when that gives
a regex.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

import numpy as np
import outlines_core

from constrain_api import (
    BaseBackend,
    BaseCompiled,
    ByteDFA,
    Capabilities,
    CompileLimitExceeded,
    CompileStats,
    StateChecker,
    UnsupportedConstraint,
    Vocabulary,
)
from constrain_api.automata import regular_node, to_regex

KINDS = frozenset({"regex", "choice", "json_schema"})


class FSMBackend(BaseBackend):
    """FSM indexing: compile-time index over the vocabulary, O(1) masks.

    Options (constructor or ``compile``): ``max_states`` bounds the DFA
    (checked on the core's DFA before outlines-core builds its own, which
    cannot be interrupted), ``max_index_seconds`` fails a compilation whose
    index took longer (reported, as it cannot be stopped midway), and
    ``cache_size`` the compiled indices kept in memory, keyed by (pattern,
    vocabulary fingerprint).
    """

    name = "fsm"
    # Not declared exact: outlines-core leaves out of an accepting state every
    # token that ends inside a UTF-8 character (regex "1٠?", token b"\xd9"
    # after "1"); masks are otherwise the oracle's (the conformance suite
    # measures the recall), and never allow more (precision 1).
    capabilities = Capabilities(
        kinds=KINDS,
        exact=frozenset(),
        notes=(
            "regular constraints only (a JSON schema lowering to a grammar is refused); "
            "not exact: out of an accepting state outlines-core keeps only tokens that end "
            "in one (plugins/fsm/README.md)"
        ),
    )

    def __init__(
        self,
        max_states: int = 100_000,
        max_index_seconds: float | None = None,
        cache_size: int = 64,
    ):
        self.max_states = max_states
        self.max_index_seconds = max_index_seconds
        self._indices: OrderedDict[tuple[str, str], tuple[Any, float]] = OrderedDict()
        self._cache_size = cache_size
        self._vocabularies: dict[str, _OutlinesVocabulary] = {}
        self._lock = threading.Lock()

    def build(self, spec, vocab: Vocabulary, **options: Any) -> BaseCompiled:
        """Compile ``spec`` into an outlines-core index over ``vocab``."""
        max_states = options.pop("max_states", self.max_states)
        max_seconds = options.pop("max_index_seconds", self.max_index_seconds)
        if options:
            raise TypeError(f"unknown compile options for fsm: {sorted(options)}")
        start = time.perf_counter()
        pattern, node = self._pattern(spec)
        precheck = ByteDFA.from_node(node, max_states=max_states)
        checked = time.perf_counter()
        ov = self._vocabulary(vocab)
        if precheck.is_empty():
            index, index_seconds = None, 0.0
        else:
            index, index_seconds = self._index(pattern, ov, vocab)
        if max_seconds is not None and index_seconds > max_seconds:
            raise CompileLimitExceeded(
                "index_seconds",
                max_seconds,
                round(index_seconds, 3),
                "outlines-core's index took longer than allowed",
            )
        states = len(index.get_transitions()) if index is not None else 0
        if states > max_states:
            raise CompileLimitExceeded("states", max_states, states, "outlines-core's index")
        stats = CompileStats(
            time.perf_counter() - start,
            states=states,
            extra={
                "index_seconds": index_seconds,
                "precheck_seconds": checked - start,
                "pattern_chars": len(pattern),
            },
        )
        return FSMCompiled(spec, vocab, stats, index, ov)

    def _pattern(self, spec) -> tuple[str, Any]:
        """The portable pattern and its AST; refuses what is not regular."""
        node = regular_node(spec, backend=self.name)
        try:
            return to_regex(node), node
        except UnsupportedConstraint as e:
            raise UnsupportedConstraint(self.name, e.construct, e.reason) from e

    def _vocabulary(self, vocab: Vocabulary) -> _OutlinesVocabulary:
        with self._lock:
            ov = self._vocabularies.get(vocab.fingerprint)
            if ov is None:
                ov = self._vocabularies[vocab.fingerprint] = _OutlinesVocabulary(vocab)
            return ov

    def _index(self, pattern: str, ov: _OutlinesVocabulary, vocab: Vocabulary):
        key = (pattern, vocab.fingerprint)
        with self._lock:
            if key in self._indices:
                self._indices.move_to_end(key)
                return self._indices[key][0], 0.0
        t0 = time.perf_counter()
        try:
            index = outlines_core.Index(pattern, ov.inner)
        except ValueError as e:  # a construct or vocabulary outlines-core cannot index
            raise UnsupportedConstraint(self.name, "regex", f"outlines-core: {e}") from None
        seconds = time.perf_counter() - t0
        with self._lock:
            self._indices[key] = (index, seconds)
            while len(self._indices) > self._cache_size:
                self._indices.popitem(last=False)
        return index, seconds


class _OutlinesVocabulary:
    """``Vocabulary`` → ``outlines_core.Vocabulary``: normal tokens by their
    exact bytes (ids sharing bytes grouped). Special tokens are left out;
    tokens with no bytes are left out too (outlines-core cannot index them)
    and allowed in every live state by the checker, as the oracle does."""

    def __init__(self, vocab: Vocabulary):
        by_bytes: dict[bytes, list[int]] = {}
        empty = []
        for token_id in vocab.normal_ids().tolist():
            data = vocab.token_bytes(token_id)
            if data:
                by_bytes.setdefault(data, []).append(token_id)
            else:
                empty.append(token_id)
        eos = vocab.eos_id if vocab.eos_ids else vocab.size
        self.inner = outlines_core.Vocabulary(eos, by_bytes)
        self.empty_ids = np.array(empty, dtype=np.int64)


class FSMCompiled(BaseCompiled):
    """An outlines-core index; packed rows per state, built on first use."""

    def __init__(self, spec, vocab, stats, index, ov: _OutlinesVocabulary):
        super().__init__(spec, vocab, stats)
        self.index = index
        self._empty_ids = ov.empty_ids
        self._rows: dict[int, np.ndarray] = {}
        self._normal = np.zeros(vocab.size, dtype=bool)
        self._normal[vocab.normal_ids()] = True

    def checker(self) -> FSMChecker:
        """A checker at the start state."""
        return FSMChecker(self)

    def row(self, state: int) -> np.ndarray:
        """The packed row of normal tokens allowed in ``state`` (cached)."""
        row = self._rows.get(state)
        if row is None:
            allowed = np.zeros(self.vocab.size, dtype=bool)
            ids = np.fromiter(self.index.get_allowed_tokens(state), dtype=np.int64)
            allowed[ids[ids < self.vocab.size]] = True
            allowed[self._empty_ids] = True
            allowed &= self._normal  # EOS and specials: set by the checker's fix-up
            padded = np.zeros(row_bits(self.vocab.size), dtype=bool)
            padded[: self.vocab.size] = allowed
            row = np.packbits(padded, bitorder="little").view("<i4").astype(np.int32)
            row.setflags(write=False)
            self._rows[state] = row  # a benign race: two threads build the same row
        return row


def row_bits(vocab_size: int) -> int:
    """Bits in a packed row of ``vocab_size`` tokens (a multiple of 32)."""
    return -(-vocab_size // 32) * 32


_DEAD = -1  # the start state of the empty language


class FSMChecker(StateChecker[int]):
    """The state is an outlines-core index state (an int)."""

    def __init__(self, compiled: FSMCompiled):
        self._index = compiled.index
        self._empty = frozenset(compiled._empty_ids.tolist())
        super().__init__(compiled)

    def start_state(self) -> int:
        return _DEAD if self._index is None else self._index.get_initial_state()

    def advance(self, state: int, token_id: int) -> int | None:
        if state == _DEAD:
            return None
        if token_id in self._empty:
            return state
        return self._index.get_next_state(state, token_id)

    def fill_state(self, state: int, row: np.ndarray) -> None:
        if state == _DEAD:
            row[:] = 0
        else:
            row[:] = self.compiled.row(state)

    def state_accepting(self, state: int) -> bool:
        return state != _DEAD and self._index.is_final_state(state)

    def state_finished(self, state: int) -> bool:
        return state == _DEAD or not self.compiled.row(state).any()
