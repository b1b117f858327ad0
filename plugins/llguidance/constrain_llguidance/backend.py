"""Backend ``llguidance``: the Checker protocol on llguidance's ``LLMatcher``.

llguidance (the engine of Guidance, used by vLLM, SGLang and llama.cpp)
lexes with derivative-based regexes over a token trie and parses with an
Earley parser; it computes each mask on the fly, with no precomputed index.

The adapter is thin: the vocabulary's exact bytes become an
``LLTokenizer`` (cached per vocabulary fingerprint), the constraint becomes
the engine's grammar text (``translate``), and one matcher, built at
compile time, is deep-copied for every checker. What the adapter adds is
the protocol's bookkeeping the engine does not have: ``update`` is atomic
(each token is validated before it is consumed, and a rejection rolls back
what the call consumed, so the matcher never enters its sticky error state),
EOS is accepted by the adapter (the matcher is left where it was, so
``rollback`` over EOS is exact), and the EOS/special bits of the mask are
set by ``SpecialBits``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import llguidance
import numpy as np

from constrain_api import (
    BaseBackend,
    BaseCompiled,
    Capabilities,
    CompileLimitExceeded,
    CompileStats,
    TokenMask,
    TokenRejected,
    UnsupportedConstraint,
    Vocabulary,
    allocate_bitmask,
    rejection_reason,
    row_view,
)

from .translate import NAME, grammar_text

KINDS = frozenset({"regex", "choice", "grammar", "json_schema"})
JSON_MODES = ("engine", "lowering")


class LLGuidanceBackend(BaseBackend):
    """llguidance behind the protocol.

    Options (constructor): ``json_schema`` — ``"engine"`` (default: the
    schema goes to llguidance's own JSON compiler, whose language differs
    from the core's in places; see the README) or ``"lowering"`` (the core's
    lowering, compiled as a regex or grammar); ``max_lexer_states`` and
    ``max_grammar_size`` bound compilation (``CompileLimitExceeded``);
    ``step_lexer_fuel`` and ``step_max_items`` bound one mask computation (a
    step past them raises ``RuntimeError``: the mask would be wrong).
    """

    name = NAME

    def __init__(
        self,
        json_schema: str = "engine",
        max_lexer_states: int = 250_000,
        max_grammar_size: int = 500_000,
        step_lexer_fuel: int = 200_000,
        step_max_items: int = 50_000,
    ):
        if json_schema not in JSON_MODES:
            raise ValueError(f"json_schema must be one of {JSON_MODES}, got {json_schema!r}")
        self.json_schema = json_schema
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
        self._tokenizers: dict[str, Any] = {}
        self._lock = threading.Lock()

    def build(self, spec, vocab: Vocabulary, **options: Any) -> BaseCompiled:
        """Translate ``spec`` and build the template matcher."""
        if options:
            raise TypeError(f"unknown compile options for llguidance: {sorted(options)}")
        start = time.perf_counter()
        grammar = grammar_text(spec, self.json_schema)
        tokenizer = self._tokenizer(vocab)
        limits = llguidance.LLParserLimits(**self.limits, verbose_errors=False)
        matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=0, limits=limits)
        if matcher.is_error():
            raise _engine_error(matcher.get_error(), self.limits)
        stats = CompileStats(
            time.perf_counter() - start,
            extra={"grammar_chars": len(grammar), "json_schema": self.json_schema},
        )
        return LLGuidanceCompiled(spec, vocab, stats, matcher, self.limits)

    def _tokenizer(self, vocab: Vocabulary) -> Any:
        with self._lock:
            tokenizer = self._tokenizers.get(vocab.fingerprint)
            if tokenizer is None:
                tokenizer = self._tokenizers[vocab.fingerprint] = _tokenizer_for(vocab)
            return tokenizer


def _engine_error(message: str, limits: dict) -> Exception:
    """The protocol's exception for an error the engine reports: a bound it
    hit (``CompileLimitExceeded``; llguidance builds its lexer automaton
    lazily, so this can happen at a later step too) or a construct it refused."""
    message = message.replace("<non-verbose/>", "").strip()
    lowered = message.lower()
    if "too many states" in lowered:
        return CompileLimitExceeded("max_lexer_states", limits["max_lexer_states"], None, message)
    if "too many expressions" in lowered or "fuel" in lowered:
        return CompileLimitExceeded("step_lexer_fuel", limits["step_lexer_fuel"], None, message)
    if "grammar size" in lowered or "too large" in lowered:
        return CompileLimitExceeded("max_grammar_size", limits["max_grammar_size"], None, message)
    if "too many" in lowered or "limit" in lowered:
        return CompileLimitExceeded("step_max_items", limits["step_max_items"], None, message)
    return UnsupportedConstraint(NAME, "constraint", f"llguidance: {message}")


class _WrappedVocabulary:
    """What ``llguidance.TokenizerWrapper`` reads: token bytes (special tokens
    as ``0xFF`` + name, llguidance's marking), EOS, and an encoder that
    llguidance only calls to tokenize forced text (never for masks)."""

    def __init__(self, vocab: Vocabulary):
        self.eos_token_id = vocab.eos_id if vocab.eos_ids else None
        self.bos_token_id = None
        self.special_token_ids = sorted(vocab.special_ids)
        self.tokens = [
            b"\xff" + vocab.token_name(i).encode() if vocab.is_special(i) else vocab.token_bytes(i)
            for i in range(vocab.size)
        ]
        self._vocab = vocab
        self._longest = max(map(len, self.tokens), default=1)
        specials = vocab.special_ids
        self._by_bytes = {t: i for i, t in enumerate(self.tokens) if i not in specials}

    def __call__(self, text: str | bytes) -> list[int]:
        data = text.encode() if isinstance(text, str) else bytes(text)
        if self._vocab.has_encoder and isinstance(text, str):
            return self._vocab.encode(text, check=False)
        out, i = [], 0
        while i < len(data):  # greedy longest match; bytes no token covers are skipped
            for j in range(min(len(data), i + self._longest), i, -1):
                token = self._by_bytes.get(data[i:j])
                if token is not None:
                    out.append(token)
                    i = j
                    break
            else:
                i += 1
        return out


def _tokenizer_for(vocab: Vocabulary) -> Any:
    """An ``LLTokenizer`` over the vocabulary's exact bytes."""
    return llguidance.LLTokenizer(
        llguidance.TokenizerWrapper(_WrappedVocabulary(vocab)),
        n_vocab=vocab.size,
        eos_token=sorted(vocab.eos_ids) or None,
    )


class LLGuidanceCompiled(BaseCompiled):
    """A template matcher, deep-copied for each checker."""

    def __init__(self, spec, vocab, stats, matcher, limits: dict):
        super().__init__(spec, vocab, stats)
        self.limits = limits
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


# What each accepted token was, for rollback: consumed by the matcher, or EOS.
_CONSUMED, _EOS = 0, 1


class LLGuidanceChecker:
    """One sequence: an ``LLMatcher`` plus the adapter's history."""

    def __init__(self, compiled: LLGuidanceCompiled, matcher: Any):
        self.compiled = compiled
        self.vocab = compiled.vocab
        self._matcher = matcher
        self._special_bits = compiled.special_bits
        self._history: list[int] = []

    @property
    def _terminated(self) -> bool:
        return bool(self._history) and self._history[-1] == _EOS

    def init(self) -> None:
        """Back to the start, history cleared."""
        self._matcher.reset()
        self._history.clear()

    def _consume(self, token_id: int) -> int | None:
        """Take one token; the history entry, or ``None`` when not allowed."""
        if self._terminated or not 0 <= token_id < self.vocab.size:
            return None
        if token_id in self.vocab.eos_ids:
            return _EOS if self._matcher.is_accepting() else None
        if token_id in self.vocab.special_ids:
            return None
        if self._matcher.validate_tokens([token_id]) != 1:
            return None
        if not self._matcher.consume_token(token_id):  # a bound hit while lexing
            raise _engine_error(self._matcher.get_error(), self.compiled.limits)
        return _CONSUMED

    def update(self, token_ids: Sequence[int]) -> None:
        """Accept ``token_ids`` atomically; ``TokenRejected`` leaves the state unchanged."""
        if isinstance(token_ids, int | np.integer):
            raise TypeError("update takes a sequence of token ids; wrap one id in a list")
        for index, token_id in enumerate(map(int, token_ids)):
            entry = self._consume(token_id)
            if entry is None:
                self.rollback(index)  # what this call took
                raise TokenRejected(token_id, index, rejection_reason(self.vocab, token_id))
            self._history.append(entry)

    def fill_mask(self, bitmask: Any, row: int = 0) -> None:
        """The engine's mask, written straight into ``bitmask[row]``, then
        EOS/special/empty-token bits set as the protocol says."""
        view = row_view(bitmask, row)
        if self._terminated:
            view[:] = 0
            return
        if not view.flags["C_CONTIGUOUS"]:
            raise TypeError("fill_mask needs a C-contiguous bitmask row")
        self._matcher.unsafe_compute_mask_ptr(view.ctypes.data, view.nbytes)
        if self._matcher.is_error():  # a bound hit while building the automaton lazily
            raise _engine_error(self._matcher.get_error(), self.compiled.limits)
        self._special_bits.finish_row(view, self._matcher.is_accepting())

    def mask(self) -> TokenMask:
        """The allowed next tokens as a new ``TokenMask``."""
        words = allocate_bitmask(1, self.vocab.size)[0]
        self.fill_mask(words)
        return TokenMask(words, self.vocab.size)

    def accepts(self, token_id: int) -> bool:
        """Whether ``token_id`` is allowed next; no state change."""
        token_id = int(token_id)
        if self._terminated or not 0 <= token_id < self.vocab.size:
            return False
        if token_id in self.vocab.eos_ids:
            return self._matcher.is_accepting()
        if token_id in self.vocab.special_ids:
            return False
        return self._matcher.validate_tokens([token_id]) == 1

    def validate(self, token_ids: Sequence[int]) -> int:
        """How many leading tokens would be accepted in a row; no state change."""
        count = 0
        try:
            for token_id in token_ids:
                entry = self._consume(int(token_id))
                if entry is None:
                    break
                self._history.append(entry)
                count += 1
        finally:
            self.rollback(count)
        return count

    def is_accepting(self) -> bool:
        """Whether EOS is allowed now."""
        return not self._terminated and self._matcher.is_accepting()

    def is_finished(self) -> bool:
        """Whether only EOS may follow, or EOS was accepted."""
        if self._terminated:
            return True
        if self._matcher.is_stopped():
            return True
        scratch = allocate_bitmask(1, self.vocab.size)[0]
        self.fill_mask(scratch)
        self._special_bits.finish_row(scratch, accepting=False)
        return not scratch.any()

    @property
    def rollback_depth(self) -> int:
        """How many tokens ``rollback`` can undo now."""
        return len(self._history)

    def rollback(self, n: int) -> None:
        """Undo the last ``n`` accepted tokens."""
        if not 0 <= n <= len(self._history):
            raise ValueError(f"cannot roll back {n} tokens; {len(self._history)} can be undone")
        if n == 0:
            return
        undone = self._history[-n:]
        del self._history[-n:]
        consumed = undone.count(_CONSUMED)
        if consumed and not self._matcher.rollback(consumed):
            raise RuntimeError(f"llguidance could not roll back: {self._matcher.get_error()}")

    def fork(self) -> LLGuidanceChecker:
        """An independent checker in the same state."""
        twin = LLGuidanceChecker(self.compiled, self._matcher.deep_copy())
        twin._history = self._history.copy()
        return twin
