"""Backend ``llguidance``: the Checker protocol on llguidance's ``LLMatcher``.

llguidance (the engine of Guidance, used by vLLM, SGLang and llama.cpp)
lexes with derivative-based regexes over a token trie and parses with an
Earley parser; it computes each mask on the fly, with no precomputed index.

The adapter is thin: the vocabulary's exact bytes become an
``LLTokenizer`` (cached per vocabulary fingerprint), the constraint becomes
the engine's grammar text (``translate``), and one matcher, built at
compile time, is deep-copied for every checker. The protocol's
bookkeeping (atomic ``update``, EOS kept from the matcher so ``rollback``
over it is exact, special tokens, the mask's EOS/special bits) is the core's
``MatcherChecker``; each token is validated before it is consumed, so the
matcher never enters its sticky error state.
"""

from __future__ import annotations

import threading
from typing import Any

import llguidance
import numpy as np
from llguidance.numpy import fill_next_token_bitmask_par

from constrain_api import (
    BaseBackend,
    BaseCompiled,
    BaseCompiler,
    Capabilities,
    CompileLimitExceeded,
    CompileStats,
    MatcherChecker,
    UnsupportedConstraint,
    allocate_bitmask,
    is_budget_error,
    lower,
)

from .tokenizer import llguidance_tokenizer
from .translate import NAME, engine_json_text, grammar_text, regex_text

KINDS = frozenset({"regex", "choice", "grammar", "json_schema"})
JSON_MODES = ("engine", "lowering")


class LLGuidanceCompiler(BaseCompiler):
    """The vocabulary as an ``LLTokenizer``; a constraint as grammar text."""

    def __init__(self, backend, vocab):
        super().__init__(backend, vocab)
        self.tokenizer = llguidance_tokenizer(vocab)

    def compile_native(self, spec, options) -> LLGuidanceCompiled | None:
        """A JSON schema to llguidance's own compiler (``json_schema="engine"``)."""
        if spec.kind == "json_schema" and self.backend.json_schema == "engine":
            try:
                return self._compiled(spec, engine_json_text(spec))
            except UnsupportedConstraint:
                # the core's rule for empty languages decides, as for every
                # backend (``lower`` raises ConstraintError if nothing fits)
                _lowered_or_none(spec)
                raise

        return None

    def compile_regular(self, language, spec, options) -> LLGuidanceCompiled:
        return self._compiled(spec, regex_text(language.regex_node()))

    def compile_grammar(self, grammar, spec, options) -> LLGuidanceCompiled:
        # the reduced grammar: the engine keeps rules that derive no string
        # and would let a text into one (a mask wider than the language)
        reduced = grammar.reduce(lazy=True)
        return self._compiled(spec, grammar_text(reduced.as_ir()))

    def _compiled(self, spec, grammar: str) -> LLGuidanceCompiled:
        """Build the template matcher."""
        limits = self.backend.limits
        engine_limits = llguidance.LLParserLimits(**limits, verbose_errors=False)
        matcher = llguidance.LLMatcher(self.tokenizer, grammar, log_level=0, limits=engine_limits)
        if matcher.is_error():
            raise _engine_error(matcher.get_error(), limits)
        stats = CompileStats(
            extra={"grammar_chars": len(grammar), "json_schema": self.backend.json_schema}
        )
        return LLGuidanceCompiled(spec, self.vocab, stats, matcher, limits, self.backend.executor)


class LLGuidanceBackend(BaseBackend):
    """llguidance behind the protocol.

    Options (constructor): ``json_schema`` — ``"engine"`` (default: the
    schema goes to llguidance's own JSON compiler, whose language differs
    from the core's in places; see the README) or ``"lowering"`` (the core's
    lowering, compiled as a regex or grammar); ``max_lexer_states`` and
    ``max_grammar_size`` bound compilation (``CompileLimitExceeded``);
    ``step_lexer_fuel`` and ``step_max_items`` bound one mask computation (a
    step past them raises ``RuntimeError``: the mask would be wrong).
    ``fill_threads`` — how ``Compiled.fill_masks`` fills a batch: ``1``
    (default) row after row in the calling thread; ``n > 1`` in one call to
    llguidance's parallel fill, on a pool of ``n`` threads of its own that
    run outside Python's GIL; ``0`` the pool's default size (80 % of the
    CPUs, at most 32). The masks are the same either way.
    """

    name = NAME
    compiler_class = LLGuidanceCompiler

    def __init__(
        self,
        json_schema: str = "engine",
        max_lexer_states: int = 250_000,
        max_grammar_size: int = 500_000,
        step_lexer_fuel: int = 200_000,
        step_max_items: int = 50_000,
        fill_threads: int = 1,
    ):
        if json_schema not in JSON_MODES:
            raise ValueError(f"json_schema must be one of {JSON_MODES}, got {json_schema!r}")
        if type(fill_threads) is not int or fill_threads < 0:
            raise ValueError(f"fill_threads must be an int >= 0, got {fill_threads!r}")
        self.json_schema = json_schema
        self.fill_threads = fill_threads
        self._executor: llguidance.LLExecutor | None = None
        self._executor_lock = threading.Lock()
        self.limits = dict(
            max_lexer_states=max_lexer_states,
            max_grammar_size=max_grammar_size,
            step_lexer_fuel=step_lexer_fuel,
            step_max_items=step_max_items,
        )
        self.capabilities = Capabilities(
            kinds=KINDS,
            exact=frozenset({"regex", "choice"}),
            notes=(
                "grammars: llguidance's lexer is greedy (longest match) where the "
                "core's grammar language is not; JSON schemas by the engine's own "
                "compiler (json_schema='lowering' for the core's language)"
            ),
        )

    def executor(self) -> llguidance.LLExecutor | None:
        """The thread pool of the parallel fill (made on first use, shared by
        this backend's artifacts), or ``None`` with ``fill_threads=1``."""
        if self.fill_threads == 1 or self._executor is not None:
            return self._executor  # (the mask's path: no lock once made)
        with self._executor_lock:
            if self._executor is None:
                self._executor = llguidance.LLExecutor(num_threads=self.fill_threads or None)
            return self._executor


def _lowered_or_none(spec) -> None:
    """Lower ``spec`` for its ``ConstraintError`` only (a refusal or a limit
    of the core's lowering is not the engine's error to report)."""
    try:
        lower(spec)
    except UnsupportedConstraint:
        pass
    except CompileLimitExceeded as e:
        if is_budget_error(e):  # the compilation is over, not refused
            raise


def _engine_error(message: str, limits: dict) -> Exception:
    """The protocol's exception for an error the engine reports: a bound it
    hit (``CompileLimitExceeded``; llguidance builds its lexer automaton
    lazily, so this can happen at a later step too) or a construct it
    refused. Only the first line is classified: the rest echoes the grammar."""
    message = message.replace("<non-verbose/>", "").strip()
    first = message.splitlines()[0].lower() if message else ""
    if "too many states" in first:
        return CompileLimitExceeded("max_lexer_states", limits["max_lexer_states"], None, message)
    if "too many expressions" in first or "fuel" in first:
        return CompileLimitExceeded("step_lexer_fuel", limits["step_lexer_fuel"], None, message)
    if "grammar size" in first:
        return CompileLimitExceeded("max_grammar_size", limits["max_grammar_size"], None, message)
    if "too many" in first or "limit exceeded" in first:
        return CompileLimitExceeded("step_max_items", limits["step_max_items"], None, message)
    return UnsupportedConstraint(NAME, "constraint", f"llguidance: {message}")


class LLGuidanceCompiled(BaseCompiled):
    """A template matcher, deep-copied for each checker; ``executor()`` gives
    the parallel fill's thread pool, or ``None`` to fill row by row. Its
    masks are computed in Rust with the GIL released (``fills_outside_gil``)."""

    fills_outside_gil = True

    def __init__(self, spec, vocab, stats, matcher, limits: dict, executor=lambda: None):
        super().__init__(spec, vocab, stats)
        self.limits = limits
        self._executor = executor
        self._template = matcher
        self._lock = threading.Lock()
        probe = matcher.deep_copy()
        scratch = allocate_bitmask(1, vocab.size)[0]
        probe.unsafe_compute_mask_ptr(scratch.ctypes.data, scratch.nbytes)
        if probe.is_error():  # the first mask builds the start of the lexer automaton
            raise _engine_error(probe.get_error(), limits)

    def checker(self) -> LLGuidanceChecker:
        """A checker at the start."""
        with self._lock:
            matcher = self._template.deep_copy()
        return LLGuidanceChecker(self, matcher)

    def fill_masks(self, checkers, bitmask) -> None:
        """Row ``i`` of ``bitmask`` gets the mask of ``checkers[i]``: with a
        thread pool (``fill_threads`` other than 1), every row in one call to
        llguidance's parallel fill when the checkers are this artifact's and
        the bitmask a C-contiguous numpy array of the batch's rows (else row
        by row)."""
        executor = self._executor()
        if (
            executor is None
            or len(checkers) < 2
            or any(type(c) is not LLGuidanceChecker or c.compiled is not self for c in checkers)
        ):
            super().fill_masks(checkers, bitmask)
            return

        def fill_live(pairs, words) -> None:
            fill_next_token_bitmask_par(executor, pairs, words)
            for matcher, _ in pairs:
                if matcher.is_error():  # a bound hit while building the automaton lazily
                    raise _engine_error(matcher.get_error(), self.limits)

        LLGuidanceChecker.fill_together(checkers, bitmask, fill_live)


class LLGuidanceChecker(MatcherChecker):
    """One sequence: an ``LLMatcher``; the bookkeeping is ``MatcherChecker``'s."""

    def matcher_accept(self, token_id: int) -> bool:
        # one engine call that validates before it consumes (consume_token on
        # a refused token is a sticky error; a refusal here changes nothing)
        if self.matcher.try_consume_tokens([token_id]) == 1:
            return True
        if self.matcher.is_error():  # a bound hit while lexing
            raise _engine_error(self.matcher.get_error(), self.compiled.limits)
        self._confirm_refusal()
        return False

    def matcher_allows(self, token_id: int) -> bool:
        if self.matcher.validate_tokens([token_id]) == 1:
            return True
        self._confirm_refusal()
        return False

    def _confirm_refusal(self) -> None:
        """The engine also refuses a token when its lexer hits a bound while
        checking it (and reports no error): the mask, which raises that
        bound, tells the two apart. Only on a refusal (``update`` or
        ``validate`` given a token not allowed, ``accepts`` answering
        ``False``); warm, a mask costs a few µs (2-4 µs on Llama-3)."""
        self.matcher_fill(allocate_bitmask(1, self.vocab.size)[0])

    def matcher_rollback(self, n: int) -> None:
        if not self.matcher.rollback(n):
            raise RuntimeError(f"llguidance could not roll back: {self.matcher.get_error()}")

    def matcher_fill(self, row: np.ndarray) -> None:
        # MatcherChecker hands a C-contiguous row of the vocabulary's width
        self.matcher.unsafe_compute_mask_ptr(row.ctypes.data, row.nbytes)
        if self.matcher.is_error():  # a bound hit while building the automaton lazily
            raise _engine_error(self.matcher.get_error(), self.compiled.limits)

    def matcher_accepting(self) -> bool:
        return self.matcher.is_accepting()

    def matcher_fork(self) -> Any:
        return self.matcher.deep_copy()

    def matcher_reset(self) -> None:
        self.matcher.reset()

    def is_finished(self) -> bool:
        """Whether only EOS may follow: the engine's stop flag, else a scratch mask."""
        if not self.terminated and self.matcher.is_stopped():
            return True
        return super().is_finished()
