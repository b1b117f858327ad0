"""Base classes that implement the protocol bookkeeping once, for plugin authors.

A backend whose per-sequence state is an immutable value (an automaton
state, a parser configuration) subclasses :class:`StateChecker` and writes
four small methods; rollback, fork, atomic updates, EOS and special tokens,
``validate`` and ``accepts`` come from here and behave identically in every
backend. A backend built on an engine whose matcher is mutable and keeps
its own history (llguidance's ``LLMatcher``, XGrammar's ``GrammarMatcher``)
subclasses :class:`MatcherChecker` and maps six engine calls; the same
bookkeeping comes from there. Anything else implements the
:class:`~constrain_api.protocols.Checker` protocol directly.
"""

from __future__ import annotations

import copy
import operator
import threading
import weakref
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from .errors import TokenRejected
from .masks import (
    BITMASK_DTYPE,
    TokenMask,
    allocate_bitmask,
    bitmask_words,
    vocab_row,
)
from .protocols import CompileStats

if TYPE_CHECKING:  # pragma: no cover
    from .protocols import Checker
    from .specs import Constraint
    from .vocabulary import Vocabulary

S = TypeVar("S")


def rejection_reason(vocab: Vocabulary, token_id: int) -> str:
    """Why ``update`` rejects ``token_id``, for ``TokenRejected`` messages:
    outside the vocabulary, EOS too early, a special token, or the constraint."""
    if not 0 <= token_id < vocab.size:
        return f"outside the vocabulary of {vocab.size}"
    if token_id in vocab.eos_ids:
        return "EOS before the text is complete"
    if token_id in vocab.special_ids:
        return "special tokens are never allowed"
    return "not allowed by the constraint"


#: The state after an accepted EOS: nothing more is allowed.
_TERMINATED = object()


class BaseCompiled(ABC):
    """Holds ``spec``, ``vocab``, ``stats`` and the vocabulary's special bits;
    ``fill_masks`` loops over ``fill_mask`` (override it to batch).
    ``fills_outside_gil``: whether ``fill_masks`` spends its time outside
    Python's GIL (an engine's native code), so a worker thread filling masks
    beside the forward pass leaves the calling thread free (the decoding
    loop does so on a GPU)."""

    fills_outside_gil: bool = False

    def __init__(self, spec: Constraint, vocab: Vocabulary, stats: CompileStats | None = None):
        self.spec = spec
        self.vocab = vocab
        self.stats = stats if stats is not None else CompileStats()
        self.special_bits = vocab.special_bits

    @abstractmethod
    def checker(self) -> Checker:
        """A new checker in the start state."""

    def fill_masks(self, checkers: Sequence[Checker], bitmask: Any) -> None:
        """Row ``i`` of ``bitmask`` gets the mask of ``checkers[i]``."""
        for i, checker in enumerate(checkers):
            checker.fill_mask(bitmask, i)


class StateChecker(ABC, Generic[S]):
    """A checker whose state is an immutable value ``S``, kept on a stack.

    Subclasses implement :meth:`start_state`, :meth:`advance`,
    :meth:`fill_state` and :meth:`state_accepting` (and may override
    :meth:`state_allows` and :meth:`state_finished` with cheaper versions).
    ``max_rollback`` bounds the history kept (``None``: everything).
    """

    #: the last bitmask ``fill_mask`` found to be a 2-D int32 numpy array
    #: exactly as wide as the vocabulary (a caller that passes the same one
    #: each step), weakly held: a :meth:`state_row` is copied into its rows
    #: without checking it again
    _exact: Callable[[], np.ndarray | None] = staticmethod(lambda: None)

    def __init__(self, compiled: BaseCompiled, max_rollback: int | None = None):
        self.compiled = compiled
        self.vocab = compiled.vocab
        self._special_bits = compiled.special_bits
        # what every step asks of the vocabulary, bound once
        self._size, self._eos_ids = self.vocab.size, self.vocab.eos_ids
        self._special_ids = self.vocab.special_ids
        self._max_rollback = max_rollback
        self.init()

    # -- what a subclass provides ------------------------------------------------
    @abstractmethod
    def start_state(self) -> S:
        """The state for the empty text."""

    @abstractmethod
    def advance(self, state: S, token_id: int) -> S | None:
        """The state after the normal token ``token_id``, or ``None`` if not allowed."""

    @abstractmethod
    def fill_state(self, state: S, row: np.ndarray) -> None:
        """Overwrite ``row`` (1-D int32 words) with the normal tokens allowed in
        ``state``. EOS, special and padding bits are fixed up afterwards."""

    @abstractmethod
    def state_accepting(self, state: S) -> bool:
        """Whether the text that led to ``state`` is in the language."""

    def state_row(self, state: S) -> np.ndarray | None:
        """The state's whole row of allowed tokens with its EOS, special and
        padding bits already fixed (``bitmask_words(V)`` int32 words, read
        only), where the backend keeps one per state (:meth:`finished_row`
        makes it from ``fill_state``'s); ``None`` (the default) where it does
        not: ``fill_mask`` then fixes those bits itself, each time."""
        return None

    def finished_row(self, state: S) -> np.ndarray:
        """A new row of :meth:`fill_state`'s words for ``state``, its EOS,
        special and padding bits fixed: what :meth:`state_row` returns, for
        a backend to keep."""
        words = allocate_bitmask(1, self._size)[0]
        self.fill_state(state, words)
        self._special_bits.finish_row(words, self.state_accepting(state))
        words.flags.writeable = False
        return words

    def state_allows(self, state: S, token_id: int) -> bool:
        """Whether the normal token is allowed; default: try to advance."""
        return self.advance(state, token_id) is not None

    def state_finished(self, state: S) -> bool:
        """Whether no normal token is allowed; default: fill a scratch row."""
        scratch = allocate_bitmask(1, self.vocab.size)[0]
        self.fill_state(state, scratch)
        self._special_bits.finish_row(scratch, accepting=False)
        return not scratch.any()

    # -- the Checker protocol ----------------------------------------------------
    @property
    def state(self) -> S:
        """The current state (an internal sentinel once EOS was accepted; see ``terminated``)."""
        return self._stack[-1]

    @property
    def terminated(self) -> bool:
        """Whether an EOS token has been accepted."""
        return self._stack[-1] is _TERMINATED

    def init(self) -> None:
        """Back to the start state; the history is cleared."""
        maxlen = None if self._max_rollback is None else self._max_rollback + 1
        self._stack: deque = deque([self.start_state()], maxlen=maxlen)

    def _step(self, state: Any, token_id: int) -> Any:
        """The next state, or ``None`` when ``token_id`` is not allowed."""
        if state is _TERMINATED or not 0 <= token_id < self._size:
            return None
        if token_id in self._eos_ids:
            return _TERMINATED if self.state_accepting(state) else None
        if token_id in self._special_ids:
            return None
        return self.advance(state, token_id)

    def update(self, token_ids: Sequence[int]) -> None:
        """Accept ``token_ids`` atomically; ``TokenRejected`` leaves the state unchanged."""
        if type(token_ids) is list and len(token_ids) == 1 and type(token_ids[0]) is int:
            token_id = token_ids[0]  # the decoding loop's call: one step, no lists
            state = self._step(self._stack[-1], token_id)
            if state is None:
                raise TokenRejected(token_id, 0, rejection_reason(self.vocab, token_id))
            self._stack.append(state)
            return
        self._stack.extend(self._states_after(token_ids)[1])

    def _states_after(self, token_ids: Sequence[int]) -> tuple[list[int], list[Any]]:
        """``(ids, states)``: the ids and the state after each, from the
        current state, changing nothing; ``TokenRejected`` at the first id
        not allowed, ``TypeError`` for a lone id (what :meth:`update` checks)."""
        if isinstance(token_ids, int | np.integer):
            raise TypeError("update takes a sequence of token ids; wrap one id in a list")
        ids = [operator.index(t) for t in token_ids]
        states = []
        state = self._stack[-1]
        for index, token_id in enumerate(ids):
            state = self._step(state, token_id)
            if state is None:
                raise TokenRejected(token_id, index, rejection_reason(self.vocab, token_id))
            states.append(state)
        return ids, states

    def fill_mask(self, bitmask: Any, row: int = 0) -> None:
        """Write the allowed next tokens into ``bitmask[row]``: the state's
        :meth:`state_row` (one copy) where the backend keeps one, else
        :meth:`fill_state`'s row with its EOS, special and padding bits fixed."""
        state = self._stack[-1]
        words = None if state is _TERMINATED else self.state_row(state)
        if words is None:
            view = vocab_row(bitmask, row, self._size)
            if state is _TERMINATED:
                view[:] = 0
                return
            self.fill_state(state, view)
            self._special_bits.finish_row(view, self.state_accepting(state))
            return
        if bitmask is self._exact():
            bitmask[row] = words  # (IndexError for a row it does not have)
            return
        vocab_row(bitmask, row, self._size)[:] = words
        if (
            type(bitmask) is np.ndarray
            and bitmask.dtype is BITMASK_DTYPE
            and bitmask.ndim == 2
            and bitmask.shape[1] == words.shape[0]
        ):
            self._exact = weakref.ref(bitmask)

    def mask(self) -> TokenMask:
        """The allowed next tokens as a new ``TokenMask``."""
        words = allocate_bitmask(1, self.vocab.size)[0]
        self.fill_mask(words)
        return TokenMask(words, self.vocab.size)

    def accepts(self, token_id: int) -> bool:
        """Whether ``token_id`` is allowed next; no state change."""
        state = self._stack[-1]
        token_id = operator.index(token_id)
        if state is _TERMINATED or not 0 <= token_id < self.vocab.size:
            return False
        if token_id in self.vocab.eos_ids:
            return self.state_accepting(state)
        if token_id in self.vocab.special_ids:
            return False
        return self.state_allows(state, token_id)

    def validate(self, token_ids: Sequence[int]) -> int:
        """How many leading tokens would be accepted in a row; no state change."""
        state = self._stack[-1]
        for count, token_id in enumerate(token_ids):
            state = self._step(state, operator.index(token_id))
            if state is None:
                return count
        return len(token_ids)

    def is_accepting(self) -> bool:
        """Whether EOS is allowed now."""
        state = self._stack[-1]
        return state is not _TERMINATED and self.state_accepting(state)

    def is_finished(self) -> bool:
        """Whether only EOS may follow, or EOS was accepted."""
        state = self._stack[-1]
        return state is _TERMINATED or self.state_finished(state)

    @property
    def rollback_depth(self) -> int:
        """How many tokens ``rollback`` can undo now."""
        return len(self._stack) - 1

    def rollback(self, n: int) -> None:
        """Undo the last ``n`` accepted tokens."""
        n = operator.index(n)
        if not 0 <= n <= len(self._stack) - 1:
            raise ValueError(f"cannot roll back {n} tokens; {len(self._stack) - 1} can be undone")
        for _ in range(n):
            self._stack.pop()

    def fork(self) -> StateChecker[S]:
        """An independent checker in the same state (states are immutable, so
        only the stack is copied)."""
        twin = copy.copy(self)
        twin._stack = self._stack.copy()
        return twin


# What each accepted token was, for MatcherChecker.rollback.
_BY_MATCHER, _EOS_ENTRY = 0, 1


class MatcherChecker(ABC):
    """A checker around a mutable engine matcher that can roll back.

    Subclasses implement :meth:`matcher_accept`, :meth:`matcher_rollback`,
    :meth:`matcher_fill`, :meth:`matcher_accepting`, :meth:`matcher_fork`
    and :meth:`matcher_reset` (and may override :meth:`matcher_allows`).
    The matcher only ever sees normal tokens: EOS is accepted here (allowed
    iff ``matcher_accepting()``) and never reaches it, so rollback over EOS
    is exact; special tokens are refused here; ``update`` is atomic (what a
    rejected call accepted is rolled back); the mask's EOS, special and
    padding bits are set by ``SpecialBits``.

    A checker belongs to one sequence and one thread at a time: a call made
    while another thread is inside one raises ``RuntimeError`` (a cheap
    non-blocking guard, not a lock that serializes; engines crash or corrupt
    memory when used so). The engine fills a C-contiguous scratch row when
    the caller's row is not one (a strided view, a Fortran-ordered bitmask),
    so it never writes outside the row; a row narrower than the vocabulary
    raises ``ValueError``.
    """

    def __init__(self, compiled: BaseCompiled, matcher: Any):
        self.compiled = compiled
        self.vocab = compiled.vocab
        self.matcher = matcher
        self._special_bits = compiled.special_bits
        self._size, self._eos_ids = self.vocab.size, self.vocab.eos_ids
        self._special_ids = self.vocab.special_ids
        self._history: list[int] = []
        self._in_use = threading.Lock()

    def _claim(self) -> None:
        """Claim the checker for this call (the caller releases ``_in_use``)."""
        if not self._in_use.acquire(blocking=False):
            raise RuntimeError(
                "this checker is in use by another thread: a checker belongs to one "
                "sequence and one thread at a time (fork() gives each its own)"
            )

    # -- what a subclass provides ------------------------------------------------
    @abstractmethod
    def matcher_accept(self, token_id: int) -> bool:
        """Advance the matcher by a normal token; ``False`` (matcher
        unchanged) when the constraint does not allow it."""

    @abstractmethod
    def matcher_rollback(self, n: int) -> None:
        """Undo the matcher's last ``n`` accepted tokens."""

    @abstractmethod
    def matcher_fill(self, row: np.ndarray) -> None:
        """Overwrite ``row`` (1-D int32 words) with the normal tokens allowed
        now; EOS, special and padding bits are fixed up afterwards."""

    @abstractmethod
    def matcher_accepting(self) -> bool:
        """Whether the text so far is in the language."""

    @abstractmethod
    def matcher_fork(self) -> Any:
        """An independent copy of the matcher."""

    @abstractmethod
    def matcher_reset(self) -> None:
        """Back to the start, the matcher's history cleared."""

    def matcher_allows(self, token_id: int) -> bool:
        """Whether a normal token is allowed; default: accept, then roll back."""
        if self.matcher_accept(token_id):
            self.matcher_rollback(1)
            return True
        return False

    # -- the Checker protocol ----------------------------------------------------
    @property
    def terminated(self) -> bool:
        """Whether an EOS token has been accepted."""
        return bool(self._history) and self._history[-1] == _EOS_ENTRY

    def init(self) -> None:
        """Back to the start; the history is cleared."""
        self._claim()
        try:
            self.matcher_reset()
            self._history.clear()
        finally:
            self._in_use.release()

    def _take(self, token_id: int) -> int | None:
        """Accept one token: its history entry, or ``None`` (state unchanged)."""
        if self.terminated or not 0 <= token_id < self._size:
            return None
        if token_id in self._eos_ids:
            return _EOS_ENTRY if self.matcher_accepting() else None
        if token_id in self._special_ids:
            return None
        return _BY_MATCHER if self.matcher_accept(token_id) else None

    def update(self, token_ids: Sequence[int]) -> None:
        """Accept ``token_ids`` atomically; ``TokenRejected`` leaves the state unchanged."""
        if type(token_ids) is list and len(token_ids) == 1 and type(token_ids[0]) is int:
            token_id = token_ids[0]  # the decoding loop's call: one step, nothing to undo
            self._claim()
            try:
                entry = self._take(token_id)
                if entry is None:
                    raise TokenRejected(token_id, 0, rejection_reason(self.vocab, token_id))
                self._history.append(entry)
                return
            finally:
                self._in_use.release()
        if isinstance(token_ids, int | np.integer):
            raise TypeError("update takes a sequence of token ids; wrap one id in a list")
        self._claim()
        try:
            for index, token_id in enumerate(map(operator.index, token_ids)):
                entry = self._take(token_id)
                if entry is None:
                    self._rollback(index)  # what this call accepted
                    raise TokenRejected(token_id, index, rejection_reason(self.vocab, token_id))
                self._history.append(entry)
        finally:
            self._in_use.release()

    def fill_mask(self, bitmask: Any, row: int = 0) -> None:
        """Write the allowed next tokens into ``bitmask[row]``."""
        view = vocab_row(bitmask, row, self.vocab.size)
        self._claim()
        try:
            if self.terminated:
                view[:] = 0
                return
            # the engine writes through raw pointers: give it contiguous memory
            target = view if view.flags.c_contiguous else np.empty(view.shape, BITMASK_DTYPE)
            self.matcher_fill(target)
            self._special_bits.finish_row(target, self.matcher_accepting())
            if target is not view:
                view[:] = target
        finally:
            self._in_use.release()

    @staticmethod
    def fill_together(
        checkers: Sequence[MatcherChecker],
        bitmask: Any,
        fill_live: Callable[[list[tuple[Any, int]], np.ndarray], None],
    ) -> None:
        """Fill row ``i`` of ``bitmask`` from ``checkers[i]`` with one call to
        the engine: ``fill_live(pairs, words)`` writes the mask of each
        ``(matcher, row)`` pair (the checkers not terminated) into row
        ``row`` of ``words``, a C-contiguous 2-D int32 numpy array exactly as
        wide as the vocabulary; terminated rows get 0, and every live row's
        EOS, special and padding bits are set after it, as ``fill_mask``
        does. Every checker is claimed for the call (``RuntimeError`` if one
        is in use). For an engine's batched or parallel fill
        (``Compiled.fill_masks``); a ``bitmask`` that is not such an array,
        or a checker given twice (its matcher would be filled by two threads
        at once), is filled row by row with ``fill_mask`` instead."""
        words = bitmask_words(checkers[0].vocab.size) if checkers else 0
        if not (
            type(bitmask) is np.ndarray
            and bitmask.dtype == BITMASK_DTYPE
            and bitmask.shape == (len(checkers), words)
            and bitmask.flags.c_contiguous
            and len({id(c) for c in checkers}) == len(checkers)
        ):
            for i, checker in enumerate(checkers):
                checker.fill_mask(bitmask, i)
            return
        claimed: list[MatcherChecker] = []
        try:
            for checker in checkers:
                checker._claim()
                claimed.append(checker)
            live = []
            for i, checker in enumerate(checkers):
                if checker.terminated:
                    bitmask[i] = 0
                else:
                    live.append((checker.matcher, i))
            if live:
                fill_live(live, bitmask)
            for _, i in live:
                checker = checkers[i]
                checker._special_bits.finish_row(bitmask[i], checker.matcher_accepting())
        finally:
            for checker in claimed:
                checker._in_use.release()

    def mask(self) -> TokenMask:
        """The allowed next tokens as a new ``TokenMask``."""
        words = allocate_bitmask(1, self.vocab.size)[0]
        self.fill_mask(words)
        return TokenMask(words, self.vocab.size)

    def accepts(self, token_id: int) -> bool:
        """Whether ``token_id`` is allowed next; no state change."""
        token_id = operator.index(token_id)
        if self.terminated or not 0 <= token_id < self.vocab.size:
            return False
        if token_id in self.vocab.special_ids and token_id not in self.vocab.eos_ids:
            return False
        self._claim()
        try:
            if token_id in self.vocab.eos_ids:
                return self.matcher_accepting()
            return self.matcher_allows(token_id)
        finally:
            self._in_use.release()

    def validate(self, token_ids: Sequence[int]) -> int:
        """How many leading tokens would be accepted in a row; no state change."""
        self._claim()
        count = 0
        try:
            for token_id in token_ids:
                entry = self._take(operator.index(token_id))
                if entry is None:
                    break
                self._history.append(entry)
                count += 1
        finally:
            try:
                self._rollback(count)
            finally:
                self._in_use.release()
        return count

    def is_accepting(self) -> bool:
        """Whether EOS is allowed now."""
        if self.terminated:
            return False
        self._claim()
        try:
            return self.matcher_accepting()
        finally:
            self._in_use.release()

    def is_finished(self) -> bool:
        """Whether only EOS may follow (a scratch mask decides), or EOS was accepted."""
        if self.terminated:
            return True
        scratch = allocate_bitmask(1, self.vocab.size)[0]
        self._claim()
        try:
            self.matcher_fill(scratch)
        finally:
            self._in_use.release()
        self._special_bits.finish_row(scratch, accepting=False)
        return not scratch.any()

    @property
    def rollback_depth(self) -> int:
        """How many tokens ``rollback`` can undo now."""
        return len(self._history)

    def rollback(self, n: int) -> None:
        """Undo the last ``n`` accepted tokens (EOS included)."""
        self._claim()
        try:
            self._rollback(n)
        finally:
            self._in_use.release()

    def _rollback(self, n: int) -> None:
        n = operator.index(n)
        if not 0 <= n <= len(self._history):
            raise ValueError(f"cannot roll back {n} tokens; {len(self._history)} can be undone")
        if n == 0:
            return
        by_matcher = self._history[-n:].count(_BY_MATCHER)
        del self._history[-n:]
        if by_matcher:
            self.matcher_rollback(by_matcher)

    def fork(self) -> MatcherChecker:
        """An independent checker in the same state."""
        self._claim()
        try:
            twin = copy.copy(self)
            twin.matcher = self.matcher_fork()
            twin._history = self._history.copy()
            twin._in_use = threading.Lock()
            return twin
        finally:
            self._in_use.release()
