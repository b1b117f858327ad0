"""``generate``: the one decoding loop every backend and every comparison runs on.

One iteration, for all live sequences ("rows") in lockstep:

1. feed each row its pending tokens (the prompt at first; then the last
   pick, a chain of forced tokens, or a speculative draft) in one forward pass;
2. fill the packed bitmask rows on the CPU (``Compiled.fill_masks``), find
   rows that are finished (only EOS allowed), dead (nothing allowed) or
   forced (exactly one token allowed: appended without a choice, chained
   while the constraint keeps forcing, fed together next time);
3. apply the masks to the logits on the model's device (``apply_bitmask_``),
   let the decoder pick, and advance the checkers;
4. drop finished rows from the batch (and, for beam search, reorder it).

Rows advance by different numbers of tokens, so the loop keeps one attention
mask over all cache slots (see :mod:`.model`): right padding and rejected
draft tokens stay in the cache, masked out.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ..masks import apply_bitmask_, bitmask_words
from ..protocols import Checker
from ..specs import Constraint
from .decoders import Decoder, Sampling, apply_penalties_, argmax, gumbel_rows, shape
from .model import CausalLM
from .results import Generation, GenerationResult, StepRecord


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
    forced: bool = True,
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
    ``speculative`` (argmax/sample): drafts of up to that many tokens from
    checkers that have ``propose(max_tokens)``, verified in one forward pass;
    the output is the same as without drafts. ``forced``: the fast path for
    tokens the constraint forces (argmax/sample).
    """
    decoder = decoder or argmax()
    params = Sampling(top_k, top_p, repetition_penalty, frequency_penalty, presence_penalty)
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    if decoder.is_beam and (opportunistic or speculative):
        raise ValueError("opportunistic masking and speculative drafts need argmax or sample")
    if opportunistic and speculative:
        raise ValueError("choose opportunistic masking or speculative drafts, not both")
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
    loop = _Loop(model, vocab, decoder, params, max_len, seed, opportunistic, speculative, forced)
    return loop.run(prompts, compiled, checkers)


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


_CHECKER_METHODS = ("update", "fill_mask", "accepts", "is_accepting", "rollback", "fork")


class _Row:
    """One sequence being generated."""

    __slots__ = (
        "checker",
        "draft",
        "forced",
        "forced_now",
        "generator",
        "interventions",
        "length",
        "pending",
        "prompt",
        "reason",
        "score",
        "skip",
        "slot",
        "tokens",
    )

    def __init__(self, prompt: int, slot: int, checker: Checker | None, pending: list[int]):
        self.prompt, self.slot, self.checker = prompt, slot, checker
        self.pending = pending  # accepted tokens the model has not seen yet
        self.draft: list[int] = []  # proposed tokens fed for verification
        self.tokens: list[int] = []
        self.length = 0  # attended cache slots
        self.score = 0.0
        self.interventions = 0
        self.forced = 0
        self.forced_now = 0  # length of the chain forced this step
        self.reason: str | None = None
        self.skip = False  # forced tokens appended this step: no pick
        self.generator: torch.Generator | None = None


class _Loop:
    def __init__(self, model, vocab, decoder, params, max_len, seed, opportunistic, spec, forced):
        self.model, self.vocab, self.decoder, self.params = model, vocab, decoder, params
        self.max_len = max_len
        self.opportunistic, self.speculative = opportunistic, spec
        self.forced = forced and not decoder.is_beam
        self.device = model.device
        # Random draws come from one generator per sequence (per prompt for
        # beam_sample), so a sequence's output does not depend on its batch.
        self.seed = seed if seed is not None else int(np.random.SeedSequence().generate_state(1)[0])
        self.eos = vocab.eos_ids
        self.words = bitmask_words(vocab.size)
        self._bitmask = torch.zeros((0, self.words), dtype=torch.int32)
        self._scratch = np.zeros(self.words, dtype=np.int32)

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
                row = _Row(p, j, checker, list(prompt))
                row.generator = self._generator(p, j)
                if self.decoder.is_beam and j:
                    row.score = -math.inf  # identical beams: expand only the first
                if self.speculative and checker is not None:
                    self._propose(row)  # a draft can ride along with the prompt
                rows.append(row)
        self._prompt_generators = [self._generator(p, -1) for p in range(len(prompts))]
        self.rows = rows
        self.cache = None
        self.attn = torch.zeros((len(rows), 0), dtype=torch.long, device=self.device)
        self._init_penalties(prompts)
        steps = []
        while self.rows:
            steps.append(self._step())
        outputs = self._collect()
        return GenerationResult(outputs, steps, time.perf_counter() - start)

    def _generator(self, prompt: int, slot: int) -> torch.Generator:
        entropy = [self.seed, prompt, slot + 1]
        state = int(np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0] >> 1)
        return torch.Generator(device=self.device).manual_seed(state)

    def _collect(self) -> list[list[Generation]]:
        if self.decoder.is_beam:
            return [sorted(h, key=lambda g: -g.score)[: self.decoder.n] for h in self.hyps]
        return [[g for g in group if g is not None] for group in self.outputs]

    def _finish(self, row: _Row, reason: str) -> None:
        """End ``row``; its output is recorded when it leaves the batch (beams: now)."""
        row.reason = reason
        if self.decoder.is_beam:
            self._record(row)

    def _record(self, row: _Row) -> None:
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

    # -- penalties -----------------------------------------------------------------
    def _init_penalties(self, prompts) -> None:
        self.seen = self.counts = None
        if not self.params.penalized:
            return
        shape_ = (len(self.rows), self.model.width)
        self.seen = torch.zeros(shape_, dtype=torch.bool, device=self.device)
        self.counts = torch.zeros(shape_, dtype=torch.float32, device=self.device)
        for i, row in enumerate(self.rows):
            ids = torch.tensor(prompts[row.prompt], device=self.device)
            self.seen[i, ids] = True

    def _count(self, index: int, tokens: list[int]) -> None:
        if self.seen is None or not tokens:
            return
        ids = torch.tensor(tokens, device=self.device)
        self.seen[index, ids] = True
        self.counts[index].index_put_((ids,), torch.ones_like(ids, dtype=torch.float32), True)

    # -- one iteration ---------------------------------------------------------------
    def _step(self) -> StepRecord:
        rows = self.rows
        chunks = [row.pending + row.draft for row in rows]
        rec = StepRecord(rows=len(rows), fed=sum(map(len, chunks)))
        rec.drafted = sum(len(row.draft) for row in rows)
        logits = self._forward(chunks, rec)
        # Positions whose logits are needed: after the last pending token, and
        # after each draft token.
        where = [
            (i, len(row.pending) - 1 + k)
            for i, row in enumerate(rows)
            for k in range(len(row.draft) + 1)
        ]
        if self.decoder.is_beam:
            self._beam_step(logits, rec)
        else:
            self._sample_step(logits, where, rec)
        self._compact()
        return rec

    def _forward(self, chunks: list[list[int]], rec: StepRecord) -> torch.Tensor:
        width = max(map(len, chunks))
        ids = np.zeros((len(chunks), width), dtype=np.int64)
        attn = np.zeros((len(chunks), width), dtype=np.int64)
        pos = np.zeros((len(chunks), width), dtype=np.int64)
        for i, (row, chunk) in enumerate(zip(self.rows, chunks, strict=True)):
            n = len(chunk)
            ids[i, :n] = chunk
            attn[i, :n] = 1
            pos[i] = row.length + np.minimum(np.arange(width), n - 1)
        dev = self.device
        self.attn = torch.cat([self.attn, torch.from_numpy(attn).to(dev)], dim=1)
        t0 = time.perf_counter()
        logits, self.cache = self.model.forward(
            torch.from_numpy(ids).to(dev), self.attn, torch.from_numpy(pos).to(dev), self.cache
        )
        _sync(dev)
        rec.forward = time.perf_counter() - t0
        self._chunk_start = self.attn.shape[1] - width
        for row in self.rows:
            row.length += len(row.pending)  # draft slots count once verified
            row.skip = False
        return logits

    def _bitmask_rows(self, n: int) -> torch.Tensor:
        if self._bitmask.shape[0] < n:
            pin = self.device.type == "cuda"
            self._bitmask = torch.zeros(
                (max(n, 2 * self._bitmask.shape[0]), self.words), dtype=torch.int32, pin_memory=pin
            )
        return self._bitmask[:n]

    def _single(self, words: np.ndarray) -> int | None:
        """The one allowed id of a mask row, ``-1`` when none, ``None`` when several."""
        nz = np.flatnonzero(words)
        if nz.size == 0:
            return -1
        if nz.size > 1:
            return None
        w = int(words[nz[0]]) & 0xFFFFFFFF
        if w & (w - 1):
            return None
        return int(nz[0]) * 32 + w.bit_length() - 1

    # -- argmax and sampling -------------------------------------------------------
    def _sample_step(self, logits: torch.Tensor, where, rec: StepRecord) -> None:
        rows = self.rows
        bitmask = None
        forced_at: dict[int, int] = {}  # position -> the first token a chain forced there
        if self.constrained and not self.opportunistic:
            bitmask = self._bitmask_rows(len(where))
            self._fill(bitmask, rec)
            self._triage(bitmask, where, forced_at, rec)
        flat = [j for j, (i, _) in enumerate(where) if rows[i].reason is None and not rows[i].skip]
        judged = flat + list(forced_at)
        if not judged:
            return
        t0 = time.perf_counter()
        dev = self.device
        index_rows = torch.tensor([where[j][0] for j in judged], device=dev)
        x = logits[index_rows, torch.tensor([where[j][1] for j in judged], device=dev)]
        if self.seen is not None:
            apply_penalties_(x, self.seen[index_rows], self.counts[index_rows], self.params)
        raw = x.clone()
        raw[:, self.vocab.size :] = float("-inf")
        noise = None
        if self.decoder.is_random:
            noise = gumbel_rows(x, [rows[where[j][0]].generator for j in judged])
        shaped_raw = shape(raw, self.decoder, self.params)
        free_ids = _argmax(shaped_raw, noise)
        free = free_ids.tolist()
        # The first token of a forced chain is judged like a pick (the rest of
        # the chain had no forward pass, so no model choice to compare with).
        for j, free_pick in zip(forced_at, free[len(flat) :], strict=True):
            if free_pick != forced_at[j]:
                rows[where[j][0]].interventions += 1
                rec.interventions += 1
        for j in forced_at:
            row = rows[where[j][0]]
            self._count(where[j][0], row.tokens[len(row.tokens) - row.forced_now :])
        rec.sample += time.perf_counter() - t0
        if not flat:
            return
        x, free = x[: len(flat)], free[: len(flat)]
        noise = None if noise is None else noise[: len(flat)]
        if not self.constrained:  # the model's own pick is the pick
            t0 = time.perf_counter()
            logp = torch.log_softmax(shaped_raw, dim=-1).gather(1, free_ids[:, None])[:, 0]
            rec.sample += time.perf_counter() - t0
            self._advance(flat, where, free, free, logp.tolist(), rec)
            return
        if self.opportunistic:
            picks, logp = self._opportunistic(x, free, noise, [where[j][0] for j in flat], rec)
        else:
            t0 = time.perf_counter()
            selected = bitmask[torch.tensor(flat)] if len(flat) < len(where) else bitmask
            apply_bitmask_(x, selected, vocab_size=self.vocab.size)
            _sync(dev)
            rec.apply += time.perf_counter() - t0
            t0 = time.perf_counter()
            shaped = shape(x, self.decoder, self.params)
            chosen = _argmax(shaped, noise)
            logp = torch.log_softmax(shaped, dim=-1).gather(1, chosen[:, None])[:, 0].tolist()
            picks = chosen.tolist()
            rec.sample += time.perf_counter() - t0
        self._advance(flat, where, picks, free, logp, rec)

    def _fill(self, bitmask: torch.Tensor, rec: StepRecord) -> None:
        """Masks for every needed position; a draft's positions are filled by
        advancing the checker along the draft and rolling it back."""
        t0 = time.perf_counter()
        rows = self.rows
        if all(not row.draft for row in rows):
            checkers = [row.checker for row in rows]
            if self.compiled is not None:
                self.compiled.fill_masks(checkers, bitmask)
            else:
                for i, checker in enumerate(checkers):
                    checker.fill_mask(bitmask, i)
        else:
            j = 0
            for row in rows:
                for k in range(len(row.draft) + 1):
                    row.checker.fill_mask(bitmask, j)
                    j += 1
                    if k < len(row.draft):
                        row.checker.update([row.draft[k]])
                row.checker.rollback(len(row.draft))
        rec.mask += time.perf_counter() - t0

    def _triage(self, bitmask: torch.Tensor, where, forced_at: dict, rec: StepRecord) -> None:
        """Finish rows that allow only EOS or nothing; append forced tokens."""
        words = bitmask.numpy()
        for j, (i, _) in enumerate(where):
            row = self.rows[i]
            if row.draft:  # the first position allows at least draft[0]
                continue
            single = self._single(words[j])
            if single is None:
                continue
            if single < 0:
                self._finish(row, "dead_end")
            elif single in self.eos:
                self._finish(row, "finished")
            elif self.forced:
                forced_at[j] = single
                self._force(row, single, rec)

    def _force(self, row: _Row, token: int, rec: StepRecord) -> None:
        """Append ``token`` and whatever the constraint forces after it; the
        chain is fed in the next forward pass."""
        t0 = time.perf_counter()
        chain = []
        while True:
            row.checker.update([token])
            row.tokens.append(token)
            chain.append(token)
            row.forced += 1
            if len(row.tokens) >= self.max_len:
                self._finish(row, "max_len")
                break
            row.checker.fill_mask(self._scratch)
            single = self._single(self._scratch)
            if single is None:
                break
            if single < 0:
                self._finish(row, "dead_end")
                break
            if single in self.eos:
                self._finish(row, "finished")
                break
            token = single
        rec.forced += len(chain)
        rec.mask += time.perf_counter() - t0
        row.pending = chain
        row.forced_now = len(chain)
        row.skip = True

    def _opportunistic(self, x, free, noise, row_ids, rec: StepRecord):
        """Keep the model's own pick where the checker accepts it; mask and
        pick again only the rows where it is rejected."""
        t0 = time.perf_counter()
        picks = list(free)
        rejected = [
            k
            for k, (i, t) in enumerate(zip(row_ids, picks, strict=True))
            if not self.rows[i].checker.accepts(t)
        ]
        rec.mask += time.perf_counter() - t0
        if rejected:
            bitmask = self._bitmask_rows(len(rejected))
            t0 = time.perf_counter()
            for j, k in enumerate(rejected):
                self.rows[row_ids[k]].checker.fill_mask(bitmask, j)
            rec.mask += time.perf_counter() - t0
            words = bitmask.numpy()
            t0 = time.perf_counter()
            index = torch.tensor(rejected, device=self.device)
            sub = x.index_select(0, index)
            apply_bitmask_(sub, bitmask, vocab_size=self.vocab.size)
            rec.apply += time.perf_counter() - t0
            t0 = time.perf_counter()
            again = _argmax(
                shape(sub, self.decoder, self.params),
                None if noise is None else noise.index_select(0, index),
            ).tolist()
            for j, k in enumerate(rejected):
                single = self._single(words[j])
                row = self.rows[row_ids[k]]
                if single is not None and single < 0:
                    self._finish(row, "dead_end")
                elif single is not None and single in self.eos:
                    self._finish(row, "finished")
                picks[k] = again[j]
            rec.sample += time.perf_counter() - t0
        # The normalising mask is not built for accepted picks: no score.
        return picks, [math.nan] * len(picks)

    def _advance(self, flat, where, picks, free, logp, rec: StepRecord) -> None:
        """Verify drafts against the picks, append the accepted tokens, update
        checkers, finish rows, and ask for the next drafts."""
        t0 = time.perf_counter()
        rows = self.rows
        k = 0
        while k < len(flat):
            i = where[flat[k]][0]
            row = rows[i]
            draft = row.draft
            accepted = 0
            while True:
                token = picks[k]
                row.score += logp[k]
                if token != free[k]:
                    row.interventions += 1
                    rec.interventions += 1
                k += 1
                if accepted < len(draft) and token == draft[accepted]:
                    accepted += 1
                    continue
                break
            k += len(draft) - accepted  # positions after the rejection
            if row.reason is not None:  # finished while opportunistic masking
                continue
            self._settle_draft(i, row, accepted, rec)
            new = [*draft[:accepted], token]
            if row.checker is not None:
                row.checker.update(new)
            ended = token in self.eos
            row.tokens.extend(new[:-1] if ended else new)
            self._count(i, new)
            if ended:
                self._finish(row, "eos")
            elif len(row.tokens) >= self.max_len:
                self._finish(row, "max_len")
            else:
                row.pending = [token]
                self._propose(row)
        rec.update += time.perf_counter() - t0

    def _settle_draft(self, index: int, row: _Row, accepted: int, rec: StepRecord) -> None:
        """Count the accepted draft slots; mask the rejected ones out of the cache."""
        if not row.draft:
            return
        rec.accepted += accepted
        row.length += accepted
        # The chunk held the pending tokens (still in row.pending), then the draft.
        first = self._chunk_start + len(row.pending)
        self.attn[index, first + accepted : first + len(row.draft)] = 0
        row.draft = []

    def _propose(self, row: _Row) -> None:
        budget = min(self.speculative, self.max_len - len(row.tokens) - 1)
        propose = getattr(row.checker, "propose", None)
        if budget <= 0 or propose is None:
            return
        draft = []
        for token in propose(budget):
            token = int(token)
            if token in self.eos or len(draft) == budget:
                break
            draft.append(token)
        row.draft = draft[: row.checker.validate(draft)]

    # -- beam search ---------------------------------------------------------------
    def _beam_step(self, logits: torch.Tensor, rec: StepRecord) -> None:
        """Expand every beam by its best (or sampled) allowed tokens, keep the
        ``n`` best continuations per prompt, and move finished ones to the
        prompt's hypotheses. Scores only fall, so a prompt is done once ``n``
        hypotheses beat every live beam."""
        rows, n, dev = self.rows, self.decoder.n, self.device
        only_eos = [False] * len(rows)
        if self.constrained:
            bitmask = self._bitmask_rows(len(rows))
            self._fill(bitmask, rec)
            words = bitmask.numpy()
            for i, row in enumerate(rows):
                single = self._single(words[i])
                if single is not None and single < 0:
                    self._finish(row, "dead_end")
                only_eos[i] = single is not None and single in self.eos
        t0 = time.perf_counter()
        index = torch.arange(len(rows), device=dev)
        last = torch.tensor([len(row.pending) - 1 for row in rows], device=dev)
        x = logits[index, last]
        if self.seen is not None:
            apply_penalties_(x, self.seen, self.counts, self.params)
        raw = x.clone()
        raw[:, self.vocab.size :] = float("-inf")
        free = shape(raw, self.decoder, self.params).argmax(-1)
        rec.sample += time.perf_counter() - t0
        if self.constrained:
            t0 = time.perf_counter()
            apply_bitmask_(x, bitmask, vocab_size=self.vocab.size)
            _sync(dev)
            rec.apply += time.perf_counter() - t0
        else:
            x = raw
        t0 = time.perf_counter()
        shaped = shape(x, self.decoder, self.params)
        logp = torch.log_softmax(shaped, dim=-1)
        base = torch.tensor([row.score for row in rows], device=dev, dtype=logp.dtype)
        total = base[:, None] + logp
        width = min(2 * n, total.shape[1])
        if self.decoder.kind == "beam":
            values, ids = torch.topk(total, width, dim=-1)
        else:  # sample the candidates (Gumbel top-k), then rank them by score
            noise = gumbel_rows(shaped, [self._prompt_generators[row.prompt] for row in rows])
            _, ids = torch.topk(shaped + noise, width, dim=-1)
            values = total.gather(1, ids)
        changed = (free != shaped.argmax(-1)).tolist()
        values, ids = values.tolist(), ids.tolist()
        rec.sample += time.perf_counter() - t0
        t0 = time.perf_counter()
        by_prompt: dict[int, list[tuple[float, int, int]]] = {}
        for i, row in enumerate(rows):
            if row.reason is None:
                entries = by_prompt.setdefault(row.prompt, [])
                entries.extend((v, i, t) for v, t in zip(values[i], ids[i], strict=True))
            rec.interventions += changed[i]
        children: list[tuple[_Row, int]] = []
        for prompt, entries in by_prompt.items():
            kept = self._select_beams(prompt, entries, only_eos, changed)
            for value, i, token in kept:
                child = self._child(rows[i], token, value, changed[i])
                if child is not None:
                    children.append((child, i))
        self.rows = [child for child, _ in children]
        if self.rows:
            parents = torch.tensor([i for _, i in children], device=dev)
            self.cache = self.model.select_rows(self.cache, parents)
            self.attn = self.attn.index_select(0, parents)
            if self.seen is not None:
                self.seen = self.seen.index_select(0, parents)
                self.counts = self.counts.index_select(0, parents)
                for k, child in enumerate(self.rows):
                    self._count(k, child.pending)
        rec.update += time.perf_counter() - t0

    def _select_beams(self, prompt, entries, only_eos, changed):
        """The live continuations to keep for ``prompt``; EOS candidates ranked
        among them become hypotheses."""
        n = self.decoder.n
        hyps = self.hyps[prompt]
        kept = []
        for value, i, token in sorted(entries, key=lambda e: -e[0]):
            if value == -math.inf:
                break
            if token in self.eos:
                row = self.rows[i]
                reason = "finished" if only_eos[i] else "eos"
                hyps.append(
                    Generation(
                        prompt,
                        list(row.tokens),
                        self.vocab.decode(row.tokens),
                        reason,
                        True if self.constrained else None,
                        value,
                        row.interventions + changed[i],
                    )
                )
                continue
            kept.append((value, i, token))
            if len(kept) == n:
                break
        if len(hyps) >= n:
            worst = sorted((h.score for h in hyps), reverse=True)[n - 1]
            if not kept or kept[0][0] <= worst:
                return []
        return kept

    def _child(self, parent: _Row, token: int, score: float, changed: bool) -> _Row | None:
        """A beam continuing ``parent`` with ``token``; ``None`` when it is
        finished at once (``max_len``) and became a hypothesis."""
        child = _Row(parent.prompt, 0, None, [token])
        if parent.checker is not None:
            child.checker = parent.checker.fork()
            child.checker.update([token])
        child.tokens = [*parent.tokens, token]
        child.length = parent.length
        child.score = score
        child.interventions = parent.interventions + changed
        if len(child.tokens) >= self.max_len:
            self._finish(child, "max_len")
            return None
        return child

    # -- batch bookkeeping -----------------------------------------------------------
    def _compact(self) -> None:
        """Drop finished rows from the batch and the model's cache."""
        keep = [i for i, row in enumerate(self.rows) if row.reason is None]
        if len(keep) == len(self.rows):
            return
        for row in self.rows:
            if row.reason is not None and not self.decoder.is_beam:
                self._record(row)
        self.rows = [self.rows[i] for i in keep]
        if not keep:
            return
        index = torch.tensor(keep, device=self.device)
        self.cache = self.model.select_rows(self.cache, index)
        self.attn = self.attn.index_select(0, index)
        if self.seen is not None:
            self.seen = self.seen.index_select(0, index)
            self.counts = self.counts.index_select(0, index)


def _argmax(scores: torch.Tensor, noise: torch.Tensor | None) -> torch.Tensor:
    """Gumbel-max when ``noise`` is given (a sample), plain argmax otherwise."""
    return (scores if noise is None else scores + noise).argmax(dim=-1)


def _sync(device: torch.device) -> None:
    """Wait for queued device work, so phase timings are honest on CUDA."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
