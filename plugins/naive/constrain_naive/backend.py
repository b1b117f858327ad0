"""Backend ``naive``: test every token of the vocabulary at every step.

Regexes, choices and LMQL-style predicates become one byte DFA (the core's
``constrain_api.automata``); grammars run on a byte-level Earley recognizer;
JSON schemas take whichever of the two the core's ``lower_json_schema``
lowers them to.
Either way a step walks the vocabulary trie once from the current state.
The masks are exact by construction: this backend is the oracle.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from constrain_api import (
    BaseBackend,
    BaseCompiled,
    ByteDFA,
    Capabilities,
    CompileStats,
    ConstraintError,
    StateChecker,
    UnsupportedConstraint,
    Vocabulary,
    dfa_for_predicate,
    lower_grammar,
    lower_json_schema,
)

from .earley import Column, EarleyRecognizer
from .scan import TrieScan

KINDS = frozenset({"regex", "grammar", "choice", "where", "json_schema"})


class _ScanCache:
    """One ``TrieScan`` per vocabulary (by fingerprint), shared by compilations."""

    def __init__(self) -> None:
        self._scans: dict[str, TrieScan] = {}

    def get(self, vocab: Vocabulary) -> TrieScan:
        key = vocab.fingerprint
        if key not in self._scans:
            self._scans[key] = TrieScan(vocab)
        return self._scans[key]


class NaiveBackend(BaseBackend):
    """Full-vocabulary scanning (LMQL, Synchromesh): exact, O(V) per step.

    Options: ``max_states`` bounds every DFA built (``CompileLimitExceeded``
    beyond it).
    """

    name = "naive"
    capabilities = Capabilities(
        kinds=KINDS,
        exact=KINDS,
        notes="the oracle: scans the vocabulary trie every step",
    )

    def __init__(self, max_states: int = 100_000):
        self.max_states = max_states
        self._scans = _ScanCache()

    def build(self, spec, vocab: Vocabulary, **options: Any) -> BaseCompiled:
        """Compile ``spec``: a DFA for regex/choice/where, an Earley recognizer for grammars."""
        max_states = options.pop("max_states", self.max_states)
        if options:
            raise TypeError(f"unknown compile options for naive: {sorted(options)}")
        start = time.perf_counter()
        try:
            target = lower_json_schema(spec) if spec.kind == "json_schema" else spec
            if target.kind == "grammar":
                ir = lower_grammar(target, backend=self.name)
                recognizer = EarleyRecognizer(ir, max_states=max_states)
                if recognizer.empty_language:
                    raise ConstraintError(
                        "grammar", f"rule {target.start!r} derives no string", None
                    )
                scan = self._scans.get(vocab)
                stats = CompileStats(
                    time.perf_counter() - start,
                    states=len(ir.rules),
                    extra={"terminals": len(ir.terminals)},
                )
                return EarleyCompiled(spec, vocab, stats, recognizer, scan)
            dfa = _dfa_for(target, max_states)
        except UnsupportedConstraint as e:
            raise UnsupportedConstraint(self.name, e.construct, e.reason) from e
        scan = self._scans.get(vocab)
        stats = CompileStats(time.perf_counter() - start, states=dfa.num_states)
        return DFACompiled(spec, vocab, stats, dfa, scan)


def _dfa_for(spec, max_states: int) -> ByteDFA:
    if spec.kind == "regex":
        return ByteDFA.from_regex(spec.pattern, max_states=max_states)
    if spec.kind == "choice":
        return ByteDFA.from_strings(o.encode("utf-8") for o in spec.options)
    if spec.kind == "where":
        return dfa_for_predicate(spec.predicate, max_states=max_states)
    raise AssertionError(spec.kind)  # BaseBackend checked the kind


class DFACompiled(BaseCompiled):
    """A byte DFA and the vocabulary's trie; checkers hold a DFA state."""

    def __init__(self, spec, vocab, stats, dfa: ByteDFA, scan: TrieScan):
        super().__init__(spec, vocab, stats)
        self.dfa = dfa
        self.scan = scan
        self.rows = dfa.rows
        self.accept = dfa.accept
        self.token_bytes = vocab.tokens

    def checker(self) -> DFAChecker:
        """A checker at the DFA's start state."""
        return DFAChecker(self)


class DFAChecker(StateChecker[int]):
    """State: the DFA state reached by the text so far."""

    compiled: DFACompiled

    def __init__(self, compiled: DFACompiled):
        self._last: tuple[int, bool] | None = None  # (state, any normal token allowed)
        super().__init__(compiled)

    def start_state(self) -> int:
        """The DFA start (``-1`` only for the empty language, where nothing is allowed)."""
        return self.compiled.dfa.start

    def advance(self, state: int, token_id: int) -> int | None:
        """Run the token's bytes through the DFA."""
        if state < 0:
            return None
        rows = self.compiled.rows
        for b in self.compiled.token_bytes[token_id]:
            state = rows[state][b]
            if state < 0:
                return None
        return state

    def fill_state(self, state: int, row: np.ndarray) -> None:
        """Walk the trie from ``state``."""
        if state < 0:
            row[:] = 0
            self._last = (state, False)
            return
        nodes = self.compiled.scan.nodes_dfa(self.compiled.rows, state)
        self.compiled.scan.write_row(nodes, row)
        self._last = (state, bool(nodes))

    def state_accepting(self, state: int) -> bool:
        """Whether the DFA state accepts."""
        return state >= 0 and self.compiled.accept[state]

    def state_finished(self, state: int) -> bool:
        """No live byte at all, or (exactly) no token: reuses the last mask of this state."""
        if state < 0 or max(self.compiled.rows[state]) < 0:
            return True
        if self._last is not None and self._last[0] == state:
            return not self._last[1]
        return super().state_finished(state)


class EarleyCompiled(BaseCompiled):
    """An Earley recognizer and the vocabulary's trie; checkers hold a column."""

    def __init__(self, spec, vocab, stats, recognizer: EarleyRecognizer, scan: TrieScan):
        super().__init__(spec, vocab, stats)
        self.recognizer = recognizer
        self.scan = scan
        self.token_bytes = vocab.tokens

    def checker(self) -> EarleyChecker:
        """A checker at the start column."""
        return EarleyChecker(self)


class EarleyChecker(StateChecker[Column]):
    """State: the Earley column of the text so far (immutable, interned)."""

    compiled: EarleyCompiled

    def __init__(self, compiled: EarleyCompiled):
        self._last: tuple[Column, bool] | None = None
        super().__init__(compiled)

    def start_state(self) -> Column:
        """The column of the empty text."""
        return self.compiled.recognizer.start

    def advance(self, state: Column, token_id: int) -> Column | None:
        """Feed the token's bytes to the recognizer."""
        return self.compiled.recognizer.run(self.compiled.token_bytes[token_id], state)

    def fill_state(self, state: Column, row: np.ndarray) -> None:
        """Walk the trie from ``state`` (the recognizer memoizes steps)."""
        nodes = self.compiled.scan.nodes_stepper(self.compiled.recognizer.step, state)
        self.compiled.scan.write_row(nodes, row)
        self._last = (state, bool(nodes))

    def state_accepting(self, state: Column) -> bool:
        """Whether the start rule is complete."""
        return state.accepting

    def state_finished(self, state: Column) -> bool:
        """No scan can go on, or (exactly) no token: reuses the last mask of this state."""
        if not state.scans:
            return True
        if self._last is not None and self._last[0] is state:
            return not self._last[1]
        return super().state_finished(state)
