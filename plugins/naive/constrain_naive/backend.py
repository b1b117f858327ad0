"""Backend ``naive``: test every token of the vocabulary at every step.

Regexes, choices and LMQL-style predicates become one byte DFA (the core's
lowering, ``Regular.dfa``); grammars run on a byte-level Earley recognizer;
JSON schemas take whichever of the two the core lowers them to.
Either way a step walks the vocabulary trie once from the current state.
The masks are exact by construction: this backend is the oracle.
"""

from __future__ import annotations

import numpy as np

from constrain_api import (
    BaseBackend,
    BaseCompiled,
    BaseCompiler,
    ByteDFA,
    Capabilities,
    CompileStats,
    ConstraintError,
    StateChecker,
)

from .earley import Column, EarleyRecognizer
from .scan import TrieScan

KINDS = frozenset({"regex", "grammar", "choice", "where", "json_schema"})


class NaiveCompiler(BaseCompiler):
    """The vocabulary's trie (``TrieScan``), shared by every compilation."""

    def __init__(self, backend, vocab):
        super().__init__(backend, vocab)
        self.scan = TrieScan(vocab)

    def compile_regular(self, language, spec, options) -> DFACompiled:
        """A byte DFA, walked with the trie at every step."""
        dfa = language.dfa(max_states=options.max_states)
        return DFACompiled(spec, self.vocab, CompileStats(states=dfa.num_states), dfa, self.scan)

    def compile_grammar(self, grammar, spec, options) -> EarleyCompiled:
        """A byte-level Earley recognizer over the grammar as lark loaded it
        (not the reduced grammar: the oracle reads the IR on its own)."""
        ir = grammar.ir
        recognizer = EarleyRecognizer(ir, max_states=options.max_states)
        if recognizer.empty_language:
            raise ConstraintError("grammar", f"rule {ir.start!r} derives no string", None)
        stats = CompileStats(states=len(ir.rules), extra={"terminals": len(ir.terminals)})
        return EarleyCompiled(spec, self.vocab, stats, recognizer, self.scan)


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
    compiler_class = NaiveCompiler
    compile_options = ("max_states",)

    def __init__(self, max_states: int = 100_000):
        self.max_states = max_states


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
