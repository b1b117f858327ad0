"""Backend ``fst``: the method of Koo et al. (*Automata-based constraints for
language model decoding*) on pynini/OpenFst.

Constrained decoding as standard automata operations: the constraint is a
byte acceptor built from the core's regex AST with pynini's union,
concatenation and closure; the vocabulary is a detokenizing transducer T_V
(token → bytes, trie-compacted, built once per vocabulary); their
composition, projected on tokens, epsilon-free, determinized and minimized,
is a token-level DFA whose arcs out of a state are exactly the allowed tokens.
Masks are packed rows per state, built on first use and cached.

Not built yet: the paper's wildcard terminals (large classes such as
``[^"]`` give states with nearly |V| arcs; without them such constraints on a
large vocabulary are refused by the ``max_composed_arcs`` estimate) and
grammars through pushdown automata.
"""

from __future__ import annotations

import threading
import time
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
from constrain_api.automata import regular_node

from .automata import detokenizer, prefix_acceptor, token_automaton

KINDS = frozenset({"regex", "choice", "json_schema"})
#: A byte state with at least this many outgoing byte values counts as "wide".
WIDE = 128


class FSTBackend(BaseBackend):
    """Koo et al.'s composition with a detokenizing transducer (regular constraints).

    Options: ``max_states`` bounds the constraint's byte automaton and the
    token automaton (``CompileLimitExceeded``); ``max_composed_arcs``
    (default 600,000) bounds the estimated size of the composition — wide
    byte states times the vocabulary size — which OpenFst cannot interrupt.
    """

    name = "fst"
    capabilities = Capabilities(
        kinds=KINDS,
        exact=KINDS,
        notes=(
            "regular constraints; no wildcard terminals yet "
            "(wide classes on large vocabularies hit a limit)"
        ),
    )

    def __init__(self, max_states: int = 100_000, max_composed_arcs: int = 600_000):
        self.max_states = max_states
        self.max_composed_arcs = max_composed_arcs
        self._detokenizers: dict[str, Any] = {}
        self._lock = threading.Lock()

    def build(self, spec, vocab: Vocabulary, **options: Any) -> BaseCompiled:
        """Compose the constraint's acceptor with T_V and determinize."""
        max_states = options.pop("max_states", self.max_states)
        max_arcs = options.pop("max_composed_arcs", self.max_composed_arcs)
        if options:
            raise TypeError(f"unknown compile options for fst: {sorted(options)}")
        start = time.perf_counter()
        node = regular_node(spec, backend=self.name)
        detok = self._detokenizer(vocab)
        after_detok = time.perf_counter()
        acceptor = prefix_acceptor(node)
        if acceptor.num_states() > max_states:
            raise CompileLimitExceeded(
                "max_states", max_states, acceptor.num_states(), "the byte automaton"
            )
        wide = sum(
            1 for s in acceptor.states() if len({a.ilabel for a in acceptor.arcs(s)}) >= WIDE
        )
        estimate = wide * vocab.size
        if estimate > max_arcs:
            raise CompileLimitExceeded(
                "max_composed_arcs",
                max_arcs,
                estimate,
                f"{wide} byte states accept almost any byte; the composition would hold "
                "about that many arcs (wildcard terminals are not implemented yet)",
            )
        automaton = token_automaton(detok, node)
        if automaton.num_states() > max_states:
            raise CompileLimitExceeded(
                "max_states", max_states, automaton.num_states(), "the token automaton"
            )
        stats = CompileStats(
            time.perf_counter() - start,
            states=automaton.num_states(),
            extra={
                "detokenizer_seconds": after_detok - start,
                "byte_states": acceptor.num_states(),
                "wide_states": wide,
            },
        )
        return FSTCompiled(spec, vocab, stats, automaton)

    def _detokenizer(self, vocab: Vocabulary):
        with self._lock:
            detok = self._detokenizers.get(vocab.fingerprint)
            if detok is None:
                detok = self._detokenizers[vocab.fingerprint] = detokenizer(vocab)
            return detok


class FSTCompiled(BaseCompiled):
    """The token-level DFA; per-state transition maps and packed rows, lazily."""

    def __init__(self, spec, vocab, stats, automaton):
        super().__init__(spec, vocab, stats)
        self.automaton = automaton
        self._eos_label = {eos + 1 for eos in vocab.eos_ids}
        self._states: dict[int, tuple[dict[int, int], np.ndarray, bool]] = {}

    def checker(self) -> FSTChecker:
        """A checker at the start state."""
        return FSTChecker(self)

    def state(self, s: int) -> tuple[dict[int, int], np.ndarray, bool]:
        """(token → next state, packed row of normal tokens, EOS allowed)."""
        entry = self._states.get(s)
        if entry is None:
            moves: dict[int, int] = {}
            accepting = False
            for arc in self.automaton.arcs(s):
                if arc.ilabel in self._eos_label:
                    accepting = True
                else:
                    moves[arc.ilabel - 1] = arc.nextstate
            allowed = np.zeros(-(-self.vocab.size // 32) * 32, dtype=bool)
            allowed[np.fromiter(moves, dtype=np.int64, count=len(moves))] = True
            row = np.packbits(allowed, bitorder="little").view("<i4").astype(np.int32)
            entry = self._states[s] = (moves, row, accepting)  # a benign race
        return entry


class FSTChecker(StateChecker[int]):
    """The state is a state of the token-level DFA (an int; -1: empty language)."""

    def start_state(self) -> int:
        return self.compiled.automaton.start()

    def advance(self, state: int, token_id: int) -> int | None:
        if state < 0:
            return None
        return self.compiled.state(state)[0].get(token_id)

    def fill_state(self, state: int, row: np.ndarray) -> None:
        if state < 0:
            row[:] = 0
        else:
            row[:] = self.compiled.state(state)[1]

    def state_accepting(self, state: int) -> bool:
        return state >= 0 and self.compiled.state(state)[2]

    def state_finished(self, state: int) -> bool:
        return state < 0 or not self.compiled.state(state)[0]
