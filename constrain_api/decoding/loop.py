"""``generate``: the one decoding loop every backend and every comparison runs on.

One iteration, for all live sequences ("rows") in lockstep:

1. feed each row its pending tokens (the prompt at first; then the last
   pick, a chain of forced tokens, or a speculative draft) in one forward pass
   (on a GPU it is queued, and the next step runs while it computes);
2. give the checkers the last step's picks (a row that ends, a beam or a
   drafting row took its pick at once; a row that only guesses guesses
   now), fill the packed bitmask rows on
   the CPU (``Compiled.fill_masks``; with ``fill_beside_forward``, these
   two in a worker thread while the pass is queued), find
   rows that are finished (only EOS allowed), dead (nothing allowed) or
   forced (exactly one token allowed: appended without a choice, chained
   while the constraint keeps forcing, fed together next time);
3. apply the masks to the logits on the model's device (``apply_bitmask_``,
   the bitmask copied without blocking from pinned memory), let the decoder
   pick (reading the picks back is the one wait for the device);
4. drop finished rows from the batch (and, for beam search, reorder it).

Rows advance by different numbers of tokens, so the loop keeps one attention
mask over all cache slots (see :mod:`.model`): right padding and rejected
draft tokens stay in the cache, masked out.

The parts: :mod:`.batch` (rows, cache, attention mask, penalty counts),
:mod:`.masking` (the bitmask buffer, filling it, reading each row once for
finished / forced / dead end), :mod:`.sampling` (argmax and sampling steps,
forced chains, opportunistic masking), :mod:`.beams` (beam search) and
:mod:`.drafts` (speculative drafts).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from ..specs import Constraint
from .batch import Batch, Row
from .beams import BeamStep
from .decoders import Decoder, Sampling, argmax
from .drafts import Drafts
from .masking import MaskBuffer
from .model import CausalLM
from .results import Generation, GenerationResult, StepRecord
from .sampling import SampleStep


def generate(
    model: CausalLM,
    vocab: Any,
    prompts: Sequence[Sequence[int]],
    constraint: Any = None,
    decoder: Decoder | None = None,
    *,
    backend: Any = None,
    max_len: int = 64,
    top_k: int | None = None,
    top_p: float | None = None,
    repetition_penalty: float = 1.0,
    frequency_penalty: float = 0.0,
    presence_penalty: float = 0.0,
    seed: int | None = None,
    opportunistic: bool = False,
    speculative: int = 0,
    draft_policy: str = "measured",
    draft_source: str = "auto",
    forced: bool = True,
    fill_beside_forward: bool | None = None,
) -> GenerationResult:
    """Decode continuations of ``prompts`` (lists of token ids) with ``model``.

    ``constraint``: ``None`` (unconstrained), a ``Compiled`` artifact (one
    checker per sequence), a constraint spec with ``backend`` (a name or a
    backend object) to compile it, or one ``Checker`` per prompt (forked,
    never mutated). ``decoder``: :func:`~.decoders.argmax` (default),
    ``sample``, ``beam`` or ``beam_sample``. ``max_len``: the most tokens
    generated per sequence. ``seed`` makes random decoders reproducible on
    one device.

    Options, all used through the ``Checker`` protocol only:
    ``opportunistic`` (argmax/sample): check the model's own pick with
    ``accepts`` and build the mask only when it is rejected (DOMINO); with
    ``top_k``/``top_p`` the model's pick is kept when allowed even where
    filtering among the allowed tokens would have excluded it.
    ``speculative`` (argmax/sample): drafts of up to that many tokens,
    verified in one forward pass; the output is the same as without drafts.
    ``draft_source``: ``"checker"`` (checkers that have
    ``propose(max_tokens)``), ``"lookup"`` (the tokens that followed the
    latest earlier occurrence of the sequence's last tokens, prompt
    included: :mod:`.lookup`), ``"auto"`` (default: the checker's where it
    has ``propose``, else the lookup's), ``"both"`` (each row drafting from
    the one right more often lately); drafts are cut to what the checker
    accepts. ``draft_policy``:
    ``"measured"`` feeds a pass's drafts only when they are expected to
    pay on this model and device (from the rows' acceptance so far and the
    loop's own pass times; see :mod:`.drafts`), ``"always"`` whenever every
    row has one.
    ``forced``: the fast path for tokens the constraint forces (argmax/sample).
    ``fill_beside_forward`` (argmax/sample without drafts or opportunistic
    masking): give the checkers the last picks and fill the masks in a
    worker thread while the forward pass is queued on the calling thread,
    so a pass bound by its launches does not wait for them; ``None``
    (default) does so where a CUDA model runs a ``Compiled`` constraint
    whose ``fill_masks`` works outside Python's GIL
    (``Compiled.fills_outside_gil``); on a CPU the forward pass needs the
    cores. The output is the same either way.
    """
    decoder = decoder or argmax()
    params = Sampling(top_k, top_p, repetition_penalty, frequency_penalty, presence_penalty)
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    if decoder.is_beam and (opportunistic or speculative):
        raise ValueError("opportunistic masking and speculative drafts need argmax or sample")
    if opportunistic and speculative:
        raise ValueError("choose opportunistic masking or speculative drafts, not both")
    if fill_beside_forward not in (None, True, False):
        raise ValueError(
            f"fill_beside_forward must be None, True or False, got {fill_beside_forward!r}"
        )
    if fill_beside_forward and (decoder.is_beam or opportunistic or speculative):
        raise ValueError(
            "fill_beside_forward needs argmax or sample without opportunistic masking or drafts"
        )
    if speculative < 0:
        raise ValueError(f"speculative must be >= 0, got {speculative}")
    if speculative and params.penalized:
        raise ValueError("speculative drafts are not combined with penalties")
    if model.width < vocab.size:
        raise ValueError(f"model gives {model.width} logits for a vocabulary of {vocab.size}")
    prompts = [[int(t) for t in p] for p in prompts]
    for i, p in enumerate(prompts):
        if not p:
            raise ValueError(f"prompt {i} is empty: give at least one token (e.g. BOS)")
        if min(p) < 0 or max(p) >= model.width:
            raise ValueError(f"prompt {i} has ids outside [0, {model.width})")
    compiled, checkers = _resolve(constraint, vocab, backend, len(prompts))
    drafts = Drafts(speculative, max_len, vocab.eos_ids, draft_policy, model, draft_source)
    loop = _Loop(model, vocab, decoder, params, max_len, seed, opportunistic, drafts, forced)
    beside = fills_beside(fill_beside_forward, model.device, compiled, loop)
    with torch.inference_mode(), _worker(beside) as worker:  # (logits: written in place)
        loop.worker = worker
        return loop.run(prompts, compiled, checkers)


def fills_beside(option: bool | None, device: torch.device, compiled: Any, loop: Any) -> bool:
    """Whether ``loop`` fills masks in a worker thread during the forward
    pass (see ``generate``'s ``fill_beside_forward``): never for beams,
    drafts or opportunistic masking; by default only for a ``Compiled``
    constraint that fills outside the GIL, on CUDA."""
    if loop.decoder.is_beam or loop.speculative or loop.opportunistic:
        return False
    if option is not None:
        return option
    return device.type == "cuda" and bool(getattr(compiled, "fills_outside_gil", False))


@contextmanager
def _worker(wanted: bool) -> Iterator[ThreadPoolExecutor | None]:
    """One worker thread for the call's masks (``None`` when not ``wanted``)."""
    if not wanted:
        yield None
        return
    pool = ThreadPoolExecutor(1, thread_name_prefix="constrain-masks")
    try:
        yield pool
    finally:
        pool.shutdown(wait=True)


def _resolve(constraint: Any, vocab: Any, backend: Any, n_prompts: int):
    """``(compiled or None, one checker per prompt or None)``."""
    if constraint is None:
        return None, None
    if isinstance(constraint, Constraint):
        if backend is None:
            raise ValueError("a constraint spec needs backend= (a name or a backend object)")
        if isinstance(backend, str):
            from ..registry import get

            backend = get(backend)
        constraint = backend.compile(constraint, vocab)
    if hasattr(constraint, "checker") and hasattr(constraint, "fill_masks"):
        if constraint.vocab != vocab:
            raise ValueError("the constraint was compiled for another vocabulary")
        return constraint, [constraint.checker() for _ in range(n_prompts)]
    given = [constraint] if _is_checker(constraint) else list(constraint)
    if len(given) != n_prompts or not all(_is_checker(c) for c in given):
        raise ValueError(f"give one Checker per prompt ({n_prompts}), a Compiled, or a spec")
    return None, [c.fork() for c in given]


def _is_checker(obj: Any) -> bool:
    """Duck-typed: ``isinstance(obj, Checker)`` misses wrappers that delegate
    through ``__getattr__`` on Python >= 3.12 (it inspects attributes statically)."""
    return all(callable(getattr(obj, name, None)) for name in _CHECKER_METHODS)


def _mix(seed: int, index: int) -> int:
    """A 63-bit seed from a row's seed and a token index (splitmix64's
    finalizer: nearby inputs give unrelated seeds)."""
    z = (seed + (index + 1) * 0x9E3779B97F4A7C15) & _U64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _U64
    return (z ^ (z >> 31)) >> 1


_U64 = (1 << 64) - 1

_CHECKER_METHODS = ("update", "fill_mask", "accepts", "is_accepting", "rollback", "fork")


class _Loop:
    """One ``generate`` call: settings, the batch, and the step for its decoder
    (:class:`~.sampling.SampleStep` or :class:`~.beams.BeamStep`)."""

    def __init__(self, model, vocab, decoder, params, max_len, seed, opportunistic, drafts, forced):
        self.model, self.vocab, self.decoder, self.params = model, vocab, decoder, params
        self.max_len = max_len
        self.opportunistic, self.speculative = opportunistic, drafts.speculative
        self.forced = forced and not decoder.is_beam
        self.device = model.device
        # Random draws: a sequence's token at index n is drawn from a
        # generator seeded by (seed, sequence, n), so its output depends
        # neither on its batch nor on how many positions a pass judged
        # (drafts); beam_sample draws from one generator per prompt.
        self.seed = seed if seed is not None else int(np.random.SeedSequence().generate_state(1)[0])
        self.eos = vocab.eos_ids
        self.buffer = MaskBuffer(vocab.size, self.device)
        self.drafts = drafts
        self.step = BeamStep(self) if decoder.is_beam else SampleStep(self)
        self.worker: ThreadPoolExecutor | None = None  # fills masks beside the pass

    # -- set-up and teardown -----------------------------------------------------
    def run(self, prompts, compiled, checkers) -> GenerationResult:
        start = time.perf_counter()
        self.compiled = compiled
        self.constrained = checkers is not None
        n = self.decoder.n
        self.outputs: list[list[Generation | None]] = [[None] * n for _ in prompts]
        self.hyps: list[list[Generation]] = [[] for _ in prompts]
        rows = []
        for p, prompt in enumerate(prompts):
            for j in range(n):
                checker = None if checkers is None else checkers[p].fork()
                row = Row(p, j, checker, list(prompt))
                row.noise_seed = self._seed(p, j)
                if self.decoder.is_beam and j:
                    row.score = -math.inf  # identical beams: expand only the first
                if self.speculative and checker is not None:
                    self.drafts.start(row, compiled)  # a draft can ride along with the prompt
                rows.append(row)
        self.prompt_generators = [
            torch.Generator(device=self.device).manual_seed(self._seed(p, -1))
            for p in range(len(prompts))
        ]
        self.batch = Batch(self.model, rows, prompts, self.params)
        steps = []
        while self.batch.rows:
            steps.append(self._step())
        if self.speculative:
            self.drafts.remember(rows, compiled)
        outputs = self._collect()
        return GenerationResult(outputs, steps, time.perf_counter() - start)

    def _seed(self, prompt: int, slot: int) -> int:
        entropy = [self.seed, prompt, slot + 1]
        return int(np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0] >> 1)

    def position_generator(self, row: Row, index: int) -> torch.Generator:
        """The generator of ``row``'s token at ``index`` (0: the first one
        generated): seeded by the row's seed and ``index`` alone."""
        return torch.Generator(device=self.device).manual_seed(_mix(row.noise_seed, index))

    def _collect(self) -> list[list[Generation]]:
        if self.decoder.is_beam:
            return [sorted(h, key=lambda g: -g.score)[: self.decoder.n] for h in self.hyps]
        return [[g for g in group if g is not None] for group in self.outputs]

    def finish(self, row: Row, reason: str) -> None:
        """End ``row``; its output is recorded when it leaves the batch (beams: now)."""
        row.reason = reason
        if self.decoder.is_beam:
            self._record(row)

    def _record(self, row: Row) -> None:
        reason = row.reason
        if row.checker is None:
            complete = None
        else:
            complete = reason in ("eos", "finished") or (
                reason == "max_len" and row.checker.is_accepting()
            )
        gen = Generation(
            row.prompt,
            list(row.tokens),
            self.vocab.decode(row.tokens),
            reason,
            complete,
            row.score,
            row.interventions,
            row.forced,
        )
        if self.decoder.is_beam:
            self.hyps[row.prompt].append(gen)
        else:
            self.outputs[row.prompt][row.slot] = gen

    # -- one iteration ---------------------------------------------------------------
    def _step(self) -> StepRecord:
        start = time.perf_counter()
        rows = self.batch.rows
        if self.speculative:
            self.drafts.hold_back(rows)
        chunks = [row.pending + row.draft for row in rows]
        rec = StepRecord(rows=len(rows), fed=sum(map(len, chunks)))
        rec.drafted = sum(len(row.draft) for row in rows)
        # Positions whose logits are read: after the last pending token, and
        # after each draft token (beams have no drafts).
        where = [
            (i, len(row.pending) - 1 + k)
            for i, row in enumerate(rows)
            for k in range(len(row.draft) + 1)
        ]
        ahead = None
        if self.worker is not None and self.constrained:
            ahead = self.worker.submit(self.step.prepare, self.buffer.rows(len(where)), rec)
        # (if the pass raises, generate's worker waits for the masks being filled)
        logits = self.batch.forward(chunks, where)
        if self.decoder.is_beam:
            self.step(logits, rec)
        else:
            self.step(logits, where, rec, ahead)
        self.batch.time_forward(rec)
        if rec.drafted:
            self.batch.trim()
        if self.speculative:
            self.drafts.timed(rec.drafted > 0, rec.fed, time.perf_counter() - start)
        self._compact()
        return rec

    def _compact(self) -> None:
        """Drop finished rows from the batch and the model's cache."""
        rows = self.batch.rows
        keep = [i for i, row in enumerate(rows) if row.reason is None]
        if len(keep) == len(rows):
            return
        for row in rows:
            if row.reason is not None and not self.decoder.is_beam:
                self._record(row)
        self.batch.select([rows[i] for i in keep], keep)
