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
are outlines-core's own; a pattern the dialect cannot spell (lookarounds
the core resolved as automaton intersections) goes as the automaton's regex,
by state elimination. ``Choice`` is an alternation of literals;
``JsonSchema`` goes through the core's lowering, to a regex or a grammar.
``Grammar``: the paper's §4, iterative parsing (``grammar.py``).
"""

from __future__ import annotations

import time

import numpy as np
import outlines_core

from constrain_api import (
    BaseBackend,
    BaseCompiled,
    BaseCompiler,
    ByteDFA,
    Capabilities,
    CompileLimitExceeded,
    CompileStats,
    StateChecker,
    UnsupportedConstraint,
    Vocabulary,
    checkpoint,
    current_budget,
    lalr_table,
    pack_row,
)
from constrain_api.automata import dfa_to_regex, to_regex

from .estimate import IndexSize, first_byte_counts, most_megabytes
from .grammar import GrammarChecker, GrammarIndex, grammar_terminals

KINDS = frozenset({"regex", "choice", "grammar", "json_schema"})


class FSMCompiler(BaseCompiler):
    """The vocabulary in outlines-core's form and the indices built over it
    (``cache_size`` of them, keyed by pattern)."""

    def __init__(self, backend, vocab):
        super().__init__(backend, vocab)
        self.outlines_vocabulary = _OutlinesVocabulary(vocab)
        self._indices = self.cache("indices", backend.cache_size, sizeof=_index_size)
        self._sizes: IndexSize | None = None
        self._first_bytes: np.ndarray | None = None

    def _check_index_size(self, patterns: list[str], dfas: list[ByteDFA], bound: float) -> None:
        """``CompileLimitExceeded`` when the indices not yet built would pass
        ``bound`` MiB (``max_index_mb``) or the compile's memory budget
        (estimated first: outlines-core cannot be interrupted)."""
        todo = [d for p, d in zip(patterns, dfas, strict=True) if self._indices.get(p) is None]
        if not todo:
            return
        budget = current_budget()
        limit = bound
        if budget is not None and budget.max_memory_mb is not None:
            limit = min(limit, budget.max_memory_mb - budget.grown_mb())
        if self._first_bytes is None:
            self._first_bytes = first_byte_counts(self.vocab)
        if most_megabytes(todo, self._first_bytes) <= limit:
            return
        if self._sizes is None:
            self._sizes = IndexSize(self.vocab)
        mb = self._sizes.megabytes(todo)
        if mb > bound:
            raise CompileLimitExceeded(
                "max_index_mb",
                bound,
                round(mb),
                "outlines-core's index would pass the memory bound (estimated before building)",
            )
        if budget is not None:
            budget.check_estimate(mb, "outlines-core's index")

    def compile_regular(self, language, spec, options) -> FSMCompiled:
        """One outlines-core index of the language's portable pattern."""
        start = time.perf_counter()
        node = language.regex_node(max_states=options.max_states)
        precheck = ByteDFA.from_node(node, max_states=options.max_states)
        try:
            pattern = to_regex(node)
        except UnsupportedConstraint:  # no portable spelling: the automaton's own regex
            pattern = dfa_to_regex(precheck)
        checked = time.perf_counter()
        if precheck.is_empty():
            rows, index_seconds = None, 0.0
        else:
            self._check_index_size([pattern], [precheck], options.max_index_mb)
            rows, index_seconds = self._index(pattern)
        _check_seconds(index_seconds, options.max_index_seconds)
        states = rows.num_states if rows is not None else 0
        if states > options.max_states:
            raise CompileLimitExceeded(
                "states", options.max_states, states, "outlines-core's index"
            )
        stats = CompileStats(
            states=states,
            extra={
                "index_seconds": index_seconds,
                "precheck_seconds": checked - start,
                "pattern_chars": len(pattern),
            },
        )
        return FSMCompiled(spec, self.vocab, stats, rows, self.outlines_vocabulary)

    def compile_grammar(self, grammar, spec, options) -> FSMGrammarCompiled:
        """Iterative parsing: one index per terminal, lark's LALR(1) tables."""
        reduced = grammar.reduce(max_states=options.max_states)
        patterns = grammar_terminals(reduced)
        lr = lalr_table(reduced.rules, reduced.names, reduced.start, backend=self.name)
        self._check_index_size(
            [patterns[n] for n in reduced.names],
            [reduced.dfas[n] for n in reduced.names],
            options.max_index_mb,
        )
        terminals, index_seconds = [], 0.0
        for name in reduced.names:
            try:
                rows, seconds = self._index(patterns[name])
            except UnsupportedConstraint as e:  # e.g. a terminal no token can start
                raise UnsupportedConstraint(self.name, f"terminal {name}", e.reason) from e
            terminals.append(rows)
            index_seconds += seconds
            checkpoint()
            _check_seconds(index_seconds, options.max_index_seconds)
        states = sum(t.num_states for t in terminals)
        if states > options.max_states:
            raise CompileLimitExceeded(
                "states", options.max_states, states, "outlines-core's indices of the terminals"
            )
        ov = self.outlines_vocabulary
        index = GrammarIndex(
            lr, list(reduced.names), reduced.ignore, terminals, ov.empty_row, options.mask_cache
        )
        stats = CompileStats(
            states=states,
            extra={
                "index_seconds": index_seconds,
                "terminals": len(reduced.names),
                "lr_states": lr.num_states,
            },
        )
        return FSMGrammarCompiled(spec, self.vocab, stats, index, ov)

    def _index(self, pattern: str) -> tuple[IndexRows, float]:
        """The index of ``pattern`` (from the cache: 0 seconds) and its build time."""
        found = self._indices.get(pattern)
        if found is not None:
            return found, 0.0
        t0 = time.perf_counter()
        try:
            index = outlines_core.Index(pattern, self.outlines_vocabulary.inner)
        except ValueError as e:  # a construct or vocabulary outlines-core cannot index
            raise UnsupportedConstraint(self.name, "regex", f"outlines-core: {e}") from None
        rows = self._indices.put(pattern, IndexRows(index, self.outlines_vocabulary))
        return rows, time.perf_counter() - t0


def _check_seconds(seconds: float, bound: float | None) -> None:
    if bound is not None and seconds > bound:
        raise CompileLimitExceeded(
            "index_seconds",
            bound,
            round(seconds, 3),
            "outlines-core's indices took longer than allowed",
        )


def _index_size(rows: IndexRows) -> int:
    """An index's packed rows built so far (outlines-core's own memory is not visible)."""
    return sum(row.nbytes for row in rows._rows.values())


class FSMBackend(BaseBackend):
    """FSM indexing: compile-time index over the vocabulary, O(1) masks.

    Options (constructor or ``compile``): ``max_states`` bounds the DFA
    (checked on the core's DFA before outlines-core builds its own, which
    cannot be interrupted; for a grammar, each terminal's and their total),
    ``max_index_seconds`` fails a compilation whose indices took longer
    (reported, as outlines-core cannot be stopped midway), ``max_index_mb``
    refuses one whose indices would pass that many MiB (estimated from the
    core's DFAs before outlines-core starts, see ``estimate.py``; default
    4096), ``mask_cache``
    the grammar masks kept per compiled grammar (one per set of terminal
    states met); constructor only: ``cache_size``, the compiled indices kept
    per vocabulary, keyed by pattern.
    """

    name = "fsm"
    # Not declared exact: outlines-core leaves out tokens through and out of
    # accepting states (regex "1٠?", token b"\xd9" after "1"), and grammar
    # masks leave out every token spanning two terminals. Masks never allow
    # more than the oracle (precision 1); the conformance suite measures recall.
    capabilities = Capabilities(
        kinds=KINDS,
        exact=frozenset(),
        notes=(
            "not exact: out of an accepting state outlines-core keeps only tokens that end "
            "in one; grammars by iterative parsing, where no token spans two terminals "
            "(plugins/fsm/README.md)"
        ),
    )
    compiler_class = FSMCompiler
    compile_options = ("max_states", "max_index_seconds", "max_index_mb", "mask_cache")

    def __init__(
        self,
        max_states: int = 100_000,
        max_index_seconds: float | None = None,
        cache_size: int = 64,
        mask_cache: int = 4096,
        max_index_mb: float = 4096,
    ):
        self.max_states = max_states
        self.max_index_seconds = max_index_seconds
        self.max_index_mb = max_index_mb
        self.mask_cache = mask_cache
        self.cache_size = cache_size


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
        self.size = vocab.size
        self.empty_ids = np.array(empty, dtype=np.int64)
        self.normal = np.zeros(vocab.size, dtype=bool)
        self.normal[vocab.normal_ids()] = True
        #: the packed row of the empty tokens alone
        self.empty_row = self.pack(self.empty_ids)

    def pack(self, ids: np.ndarray) -> np.ndarray:
        """The read-only packed row of the normal tokens among ``ids`` and the empty ones."""
        allowed = np.zeros(self.size, dtype=bool)
        allowed[ids[ids < self.size]] = True
        allowed[self.empty_ids] = True
        allowed &= self.normal  # EOS and specials: set by the checker's fix-up
        row = pack_row(allowed)
        row.setflags(write=False)
        return row


class IndexRows:
    """An outlines-core index and its packed rows per state, built on first
    use and shared by every compiled form and checker that uses the index."""

    def __init__(self, index, ov: _OutlinesVocabulary):
        self.index = index
        self.num_states = len(index.get_transitions())
        self._ov = ov
        self._rows: dict[int, np.ndarray] = {}

    def row(self, state: int) -> np.ndarray:
        """The packed row of normal tokens allowed in ``state`` (cached)."""
        row = self._rows.get(state)
        if row is None:
            ids = np.fromiter(self.index.get_allowed_tokens(state), dtype=np.int64)
            row = self._ov.pack(ids)
            self._rows[state] = row  # a benign race: two threads build the same row
        return row


class FSMCompiled(BaseCompiled):
    """A regular constraint: one outlines-core index (``None``: the empty language)."""

    def __init__(self, spec, vocab, stats, rows: IndexRows | None, ov: _OutlinesVocabulary):
        super().__init__(spec, vocab, stats)
        self.rows = rows
        self.index = rows.index if rows is not None else None
        self.empty_token_ids = frozenset(ov.empty_ids.tolist())

    def checker(self) -> FSMChecker:
        """A checker at the start state."""
        return FSMChecker(self)

    def row(self, state: int) -> np.ndarray:
        """The packed row of normal tokens allowed in ``state`` (cached)."""
        return self.rows.row(state)


class FSMGrammarCompiled(BaseCompiled):
    """A grammar: LR tables and one index per terminal (``grammar.py``)."""

    def __init__(self, spec, vocab, stats, grammar: GrammarIndex, ov: _OutlinesVocabulary):
        super().__init__(spec, vocab, stats)
        self.grammar = grammar
        self.empty_token_ids = frozenset(ov.empty_ids.tolist())

    def checker(self) -> GrammarChecker:
        """A checker at the start state."""
        return GrammarChecker(self)


_DEAD = -1  # the start state of the empty language


class FSMChecker(StateChecker[int]):
    """The state is an outlines-core index state (an int)."""

    def __init__(self, compiled: FSMCompiled):
        self._index = compiled.index
        self._empty = compiled.empty_token_ids
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
