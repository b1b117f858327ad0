"""The checks, as plain functions: each compares a backend with the oracle (or
with itself) and returns what it found, so the pytest suite and the suite's
own tests (deliberately broken backends) share one implementation."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

import constrain_api as ca


@dataclass
class MaskComparison:
    """Masks of a backend against the oracle's along one token path.

    ``extra``: (step, token) pairs the backend allows and the oracle forbids
    (precision failures); ``missing``: pairs the oracle allows and the backend
    forbids (recall failures); ``rejected_at``: the step where the backend
    refused a path token the oracle accepts (``None``: it accepted them all);
    ``finished_wrong``: the steps where ``is_finished()`` disagreed with the
    backend's own mask (finished iff it allows no token but EOS).
    """

    steps: int = 0
    backend_allowed: int = 0
    oracle_allowed: int = 0
    extra: list[tuple[int, int]] = field(default_factory=list)
    missing: list[tuple[int, int]] = field(default_factory=list)
    rejected_at: int | None = None
    finished_wrong: list[int] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        """Whether every mask was the oracle's (and ``is_finished`` said so)."""
        return (
            not self.extra
            and not self.missing
            and self.rejected_at is None
            and not self.finished_wrong
        )

    @property
    def sound(self) -> bool:
        """What an inexact backend must keep: no token the oracle forbids, and
        an ``is_finished`` that agrees with its own masks."""
        return not self.extra and not self.finished_wrong

    @property
    def precision(self) -> float:
        """Share of allowed tokens the oracle allows too (must be 1.0)."""
        if not self.backend_allowed:
            return 1.0
        return 1.0 - len(self.extra) / self.backend_allowed

    @property
    def recall(self) -> float:
        """Share of the oracle's allowed tokens the backend allows."""
        if not self.oracle_allowed:
            return 1.0
        return 1.0 - len(self.missing) / self.oracle_allowed

    def describe(self, vocab: ca.Vocabulary, limit: int = 5) -> str:
        """The first differences, with token bytes, for failure messages."""
        parts = [f"{self.steps} steps, precision {self.precision:.4f}, recall {self.recall:.4f}"]
        for label, pairs in (("allowed but forbidden", self.extra), ("missing", self.missing)):
            shown = ", ".join(f"step {s}: {vocab.token_name(t)}" for s, t in pairs[:limit])
            if pairs:
                parts.append(f"{len(pairs)} {label} ({shown})")
        if self.rejected_at is not None:
            parts.append(f"rejected the path's token at step {self.rejected_at}")
        if self.finished_wrong:
            steps = ", ".join(map(str, self.finished_wrong[:limit]))
            parts.append(f"is_finished() disagreed with the mask at steps {steps}")
        return "; ".join(parts)


# The oracle's masks along a path, zlib-compressed, shared by every backend
# the session checks: on a 128k vocabulary the oracle's walk dominates the
# suite's time, and it is the same for each backend. Bounded in bytes.
_ORACLE_MASKS: dict[tuple, list[bytes]] = {}
_ORACLE_CACHE_LIMIT = 1 << 30
_oracle_cache_bytes = 0
_oracle_lock = threading.Lock()


def oracle_masks(oracle: ca.Compiled, path: Sequence[int]) -> list[ca.TokenMask]:
    """The oracle's mask before every token of ``path`` and after the last
    (computed once per oracle spec, vocabulary and path in a session)."""
    global _oracle_cache_bytes
    key = (type(oracle).__qualname__, oracle.vocab.fingerprint, oracle.spec, tuple(path))
    try:
        with _oracle_lock:
            packed = _ORACLE_MASKS.get(key)
    except TypeError:  # an unhashable spec: no caching
        key, packed = None, None
    size = oracle.vocab.size
    if packed is None:
        reference = oracle.checker()
        words = []
        for step in range(len(path) + 1):
            words.append(reference.mask().words.copy())
            if step < len(path):
                reference.update([path[step]])
        packed = [zlib.compress(w.tobytes(), 1) for w in words]
        if key is not None:
            with _oracle_lock:
                if _oracle_cache_bytes < _ORACLE_CACHE_LIMIT:
                    _ORACLE_MASKS[key] = packed
                    _oracle_cache_bytes += sum(map(len, packed))
    return [ca.TokenMask(np.frombuffer(zlib.decompress(p), dtype=np.int32), size) for p in packed]


def compare_masks(
    compiled: ca.Compiled, oracle: ca.Compiled, path: Sequence[int]
) -> MaskComparison:
    """Step along ``path`` (tokens the oracle accepts, EOS excluded) with both,
    comparing the full mask before every token and after the last one."""
    result = MaskComparison()
    checker = compiled.checker()
    eos = sorted(compiled.vocab.eos_ids)
    wanted = oracle_masks(oracle, path)
    size = compiled.vocab.size
    for step in range(len(path) + 1):
        # compared as packed words: a set difference of 100k-id arrays per
        # step would cost more than most backends' masks
        got, want = checker.mask(), wanted[step]
        result.steps += 1
        eos_allowed = sum(1 for e in eos if e in got)
        if checker.is_finished() != (got.count() == eos_allowed):
            result.finished_wrong.append(step)
        result.backend_allowed += got.count()
        result.oracle_allowed += want.count()
        for pairs, words in (
            (result.extra, got.words & ~want.words),
            (result.missing, want.words & ~got.words),
        ):
            if words.any():
                pairs += [(step, int(t)) for t in ca.TokenMask(words, size).allowed_ids()]
        if step == len(path):
            break
        token = path[step]
        try:
            checker.update([token])
        except ca.TokenRejected:
            result.rejected_at = step
            break
    return result


@dataclass
class Verdict:
    """Outcome of a document: ``accepted`` (every token and then EOS), or the
    step where it stopped being accepted."""

    accepted: bool
    stopped_at: int | None


def run_document(compiled: ca.Compiled, path: Sequence[int]) -> Verdict:
    """Feed ``path`` token by token; accepted iff every token is and EOS is allowed at the end."""
    checker = compiled.checker()
    for step, token in enumerate(path):
        if not checker.accepts(token):
            return Verdict(False, step)
        checker.update([token])
    eos = compiled.vocab.eos_id
    ok = checker.is_accepting() and eos in checker.mask()
    return Verdict(ok, None if ok else len(path))


def reproduces(compiled: ca.Compiled, target: Sequence[int]) -> bool:
    """Minimal invasiveness: constrained argmax decoding with a ``ScriptedLM``
    that wants ``target`` (a valid document's tokens) yields exactly ``target``,
    complete. Needs torch (the decoding loop)."""
    from constrain_api.decoding import ScriptedLM, argmax, generate

    vocab = compiled.vocab
    lm = ScriptedLM(list(target), width=vocab.size, eos_id=vocab.eos_id)
    prompt = [[vocab.eos_id]]  # any token: the scripted model ignores its prompt
    result = generate(lm, vocab, prompt, compiled, argmax(), max_len=len(target) + 1)
    (generation,) = result.sequences
    return generation.token_ids == list(target) and bool(generation.complete)


def state_operation_failures(compiled: ca.Compiled, path: Sequence[int]) -> list[str]:
    """Everything wrong with rollback, fork, rejection, fill_mask and EOS along
    a path the backend accepts; an empty list means all is well."""
    failures: list[str] = []
    vocab = compiled.vocab
    checker = compiled.checker()
    masks = [checker.mask().copy()]
    for token in path:
        checker.update([token])
        masks.append(checker.mask().copy())
    n = len(path)
    bitmask = ca.allocate_bitmask(2, vocab.size)
    bitmask[:] = -1
    checker.fill_mask(bitmask, 1)
    if ca.TokenMask(bitmask[1], vocab.size) != masks[-1]:
        failures.append("fill_mask differs from mask()")
    checker.fill_mask(bitmask, 0)  # (the same bitmask again: a backend may know it by now)
    if ca.TokenMask(bitmask[0], vocab.size) != masks[-1]:
        failures.append("fill_mask into a bitmask filled before differs from mask()")
    words = bitmask.shape[1]  # a bitmask sized for a model's padded logits: wider
    wide = np.full((3, words + 2), -1, dtype=np.int32)
    checker.fill_mask(wide, 1)
    if ca.TokenMask(wide[1, :words], vocab.size) != masks[-1] or wide[1, words:].any():
        failures.append("fill_mask into a row wider than the vocabulary: not mask() then zeros")
    if not (wide[[0, 2]] == -1).all():
        failures.append("fill_mask wrote outside its row")
    failures += _fill_masks_failures(compiled, path, masks)
    for k in sorted({1, 2, n // 2, n} - {0}):
        if k > n:
            continue
        twin = compiled.checker()
        twin.update(list(path))
        twin.rollback(k)
        if twin.mask() != masks[n - k]:
            failures.append(
                f"rollback({k}) after {n} tokens does not restore the mask of step {n - k}"
            )
    if n:
        base = compiled.checker()
        base.update(list(path[:1]))
        fork = base.fork()
        fork.update(list(path[1:2]))
        if base.mask() != masks[1]:
            failures.append("updating a fork changed the original")
        if len(path) > 1 and fork.mask() != masks[2]:
            failures.append("a fork does not continue from the original's state")
    forbidden = np.setdiff1d(np.arange(vocab.size), masks[-1].allowed_ids())
    if forbidden.size:
        token = int(forbidden[0])
        try:
            checker.update([token])
            failures.append(f"update accepted the forbidden token {vocab.token_name(token)}")
        except ca.TokenRejected:
            if checker.mask() != masks[-1]:
                failures.append("a rejected update changed the state")
    if checker.is_accepting():
        checker.update([vocab.eos_id])
        if checker.mask().count() or not checker.is_finished():
            failures.append("after EOS the mask is not empty or is_finished() is false")
    return failures


def _fill_masks_failures(
    compiled: ca.Compiled, path: Sequence[int], masks: list[ca.TokenMask]
) -> list[str]:
    """``Compiled.fill_masks`` over checkers at several steps of ``path``
    (one past EOS where the text is complete), into a bitmask with a row
    more than the checkers: row ``i`` must be checker ``i``'s mask, the
    last row untouched (a backend may fill the rows at once, in parallel)."""
    vocab, n = compiled.vocab, len(path)
    steps = sorted({0, 1, n // 2, n - 1, n} & set(range(n + 1)))
    checkers, expected = [], []
    for k in steps:
        checker = compiled.checker()
        checker.update(list(path[:k]))
        checkers.append(checker)
        expected.append(masks[k])
    if checkers[-1].is_accepting():
        ended = checkers[-1].fork()
        ended.update([vocab.eos_id])
        checkers.insert(1, ended)
        expected.insert(1, ended.mask())
    bitmask = np.full((len(checkers) + 1, ca.bitmask_words(vocab.size)), -1, dtype=np.int32)
    compiled.fill_masks(checkers, bitmask)
    failures = [
        f"fill_masks row {i} differs from its checker's mask"
        for i, mask in enumerate(expected)
        if ca.TokenMask(bitmask[i], vocab.size) != mask
    ]
    if not (bitmask[-1] == -1).all():
        failures.append("fill_masks wrote past its checkers' rows")
    return failures


def concurrency_failures(
    compiled: ca.Compiled, paths: Sequence[Sequence[int]], threads: int = 4, max_steps: int = 64
):
    """Masks computed in threads over one shared ``Compiled`` must equal
    sequential ones, over the first ``max_steps`` tokens of each path (races
    show early; the full walk of a long document costs minutes on the oracle)."""

    def walk(path: Sequence[int]) -> list[bytes]:
        checker = compiled.checker()
        out = [checker.mask().words.tobytes()]
        for token in path[:max_steps]:
            if not checker.accepts(token):  # an inexact backend may stop early
                break
            checker.update([token])
            out.append(checker.mask().words.tobytes())
        return out

    sequential = [walk(p) for p in paths]
    with ThreadPoolExecutor(threads) as pool:
        parallel = list(pool.map(walk, paths))
    return [i for i, (a, b) in enumerate(zip(sequential, parallel, strict=True)) if a != b]
