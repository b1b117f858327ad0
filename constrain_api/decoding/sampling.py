"""One step of argmax or sampling: masks, forced chains, opportunistic
masking, the pick, and advancing the checkers (verifying drafts)."""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from ..masks import apply_bitmask_
from .batch import Row
from .decoders import apply_penalties_, best_ids, gumbel_rows, shape
from .drafts import Drafts
from .masking import NOTHING, SEVERAL, fill_positions, sole_tokens
from .results import StepRecord


class SampleStep:
    """Argmax and sampling (not beams) for ``loop``: its settings (``vocab``,
    ``decoder``, ``params``, ``max_len``, ``eos``, ``forced``,
    ``opportunistic``, ``constrained``, ``compiled``), its ``batch``,
    ``buffer`` and ``drafts``, and ``loop.finish(row, reason)``."""

    def __init__(self, loop: Any):
        self.loop = loop

    def prepare(self, bitmask: torch.Tensor, rec: StepRecord) -> None:
        """The step's constraint work that needs no logits: the checkers
        catch up with the last picks and fill ``bitmask`` (one row each).
        Run in the loop's worker thread while the forward pass is queued
        (``rec.overlapped``: its time); the step waits for it."""
        loop = self.loop
        t0 = time.perf_counter()
        scratch = StepRecord(rows=0, fed=0)
        _catch_up(loop.batch.rows, scratch, loop.drafts)
        fill_positions(loop.batch.rows, loop.compiled, bitmask, scratch)
        rec.overlapped += time.perf_counter() - t0

    def __call__(self, logits: torch.Tensor, where, rec: StepRecord, ahead=None) -> None:
        """Pick one token for every position in ``where`` ((row, position)
        pairs: after the pending tokens, and after each draft token) of the
        live rows that are not forced this step; ``logits[j]`` are those at
        ``where[j]``. ``ahead``: the future of :meth:`prepare` when the loop
        ran it beside the forward pass (its wait counts as ``rec.mask``)."""
        loop = self.loop
        rows = loop.batch.rows
        bitmask = None
        forced_at: dict[int, int] = {}  # position -> the first token a chain forced there
        if ahead is not None:
            t0 = time.perf_counter()
            ahead.result()  # (raises what the worker raised)
            rec.mask += time.perf_counter() - t0
            bitmask = loop.buffer.rows(len(where))
            self._triage(bitmask, where, forced_at, rec)
        elif loop.constrained:
            _catch_up(rows, rec, loop.drafts)
            if not loop.opportunistic:
                bitmask = loop.buffer.rows(len(where))
                fill_positions(rows, loop.compiled, bitmask, rec)
                self._triage(bitmask, where, forced_at, rec)
        flat = [j for j, (i, _) in enumerate(where) if rows[i].reason is None and not rows[i].skip]
        judged = flat + list(forced_at)
        if not judged:
            return
        t0 = time.perf_counter()
        dev, params = loop.batch.device, loop.params
        in_order = judged == list(range(len(where)))
        x = logits if in_order else logits[_on(dev, judged)]
        seen = loop.batch.seen
        if seen is not None:
            counts, batch_rows = loop.batch.counts, [where[j][0] for j in judged]
            if batch_rows != list(range(seen.shape[0])):  # (else no copy of [N, W] flags)
                index_rows = _on(dev, batch_rows)
                seen, counts = seen[index_rows], counts[index_rows]
            apply_penalties_(x, seen, counts, params)
        # the model's own pick: over the vocabulary (the columns past it are
        # refused by the mask too, so x keeps them refused); taken before the
        # mask is applied to x in place (shaped_raw may be x itself)
        x[:, loop.vocab.size :] = float("-inf")
        noise = None
        if loop.decoder.is_random:
            noise = gumbel_rows(x, [self._generator(where[j], j in forced_at) for j in judged])
        shaped_raw = shape(x, loop.decoder, params)
        free_ids = _argmax(shaped_raw, noise)
        for j in forced_at:
            row = rows[where[j][0]]
            loop.batch.count(where[j][0], row.tokens[len(row.tokens) - row.forced_now :])
        n = len(flat)
        x = x[:n]
        noise = None if noise is None else noise[:n]
        chosen = logp = None
        if n and not loop.constrained:  # the model's own pick is the pick
            chosen = free_ids
            logp = torch.log_softmax(shaped_raw, dim=-1).gather(1, free_ids[:, None])[:, 0]
        elif n and not loop.opportunistic:
            rec.sample += time.perf_counter() - t0
            t0 = time.perf_counter()
            selected = bitmask  # (pinned: copied to a GPU without waiting for it)
            if n < len(where):  # rows picked among the positions: selected there
                selected = bitmask.to(dev, non_blocking=True)[_on(dev, flat)]
            apply_bitmask_(x, selected, vocab_size=loop.vocab.size)  # (queued on a GPU)
            rec.apply += time.perf_counter() - t0
            t0 = time.perf_counter()
            shaped = shape(x, loop.decoder, params)
            chosen = _argmax(shaped, noise)
            logp = torch.log_softmax(shaped, dim=-1).gather(1, chosen[:, None])[:, 0]
        # Everything above is queued on a GPU; reading it back is the one wait.
        free = free_ids.tolist()
        picks = None if chosen is None else chosen.tolist()
        scores = None if logp is None else logp.tolist()
        # The first token of a forced chain is judged like a pick (the rest of
        # the chain had no forward pass, so no model choice to compare with).
        for j, free_pick in zip(forced_at, free[n:], strict=True):
            if free_pick != forced_at[j]:
                rows[where[j][0]].interventions += 1
                rec.interventions += 1
        rec.sample += time.perf_counter() - t0
        if not n:
            return
        free = free[:n]
        if picks is None:  # opportunistic
            picks, scores = self._opportunistic(x, free, noise, [where[j][0] for j in flat], rec)
        self._advance(flat, where, picks, free, scores, rec)

    def _generator(self, at: tuple[int, int], forced: bool) -> torch.Generator:
        """The generator of the token judged at ``at`` (row, position in the
        pass): its index in the row's output counts the pending tokens
        (already in ``row.tokens``) and the draft tokens before it; a forced
        chain's first token was appended with the chain."""
        row = self.loop.batch.rows[at[0]]
        if forced:
            index = len(row.tokens) - row.forced_now
        else:
            index = len(row.tokens) + at[1] - (len(row.pending) - 1)
        return self.loop.position_generator(row, index)

    def _triage(self, bitmask: torch.Tensor, where, forced_at: dict, rec: StepRecord) -> None:
        """Finish rows that allow only EOS or nothing; append forced tokens."""
        loop = self.loop
        sole = sole_tokens(bitmask.numpy()).tolist()
        for j, (i, _) in enumerate(where):
            row = loop.batch.rows[i]
            if row.draft:  # the first position allows at least draft[0]
                continue
            single = sole[j]
            if single == SEVERAL:
                continue
            if single == NOTHING:
                loop.finish(row, "dead_end")
            elif single in loop.eos:
                loop.finish(row, "finished")
            elif loop.forced:
                forced_at[j] = single
                self._force(row, single, rec)

    def _force(self, row: Row, token: int, rec: StepRecord) -> None:
        """Append ``token`` and whatever the constraint forces after it; the
        chain is fed in the next forward pass."""
        loop = self.loop
        t0 = time.perf_counter()
        chain = []
        while True:
            row.checker.update([token])
            row.tokens.append(token)
            chain.append(token)
            row.forced += 1
            if len(row.tokens) >= loop.max_len:
                loop.finish(row, "max_len")
                break
            single = loop.buffer.sole_token(row.checker)
            if single == SEVERAL:
                break
            if single == NOTHING:
                loop.finish(row, "dead_end")
                break
            if single in loop.eos:
                loop.finish(row, "finished")
                break
            token = single
        rec.forced += len(chain)
        rec.mask += time.perf_counter() - t0
        loop.drafts.forget(row)  # (a guess made before the chain: not judged)
        row.pending = chain
        row.forced_now = len(chain)
        row.skip = True

    def _opportunistic(self, x, free, noise, row_ids, rec: StepRecord):
        """Keep the model's own pick where the checker accepts it; mask and
        pick again only the rows where it is rejected."""
        loop = self.loop
        rows = loop.batch.rows
        t0 = time.perf_counter()
        picks = list(free)
        rejected = [
            k
            for k, (i, t) in enumerate(zip(row_ids, picks, strict=True))
            if not rows[i].checker.accepts(t)
        ]
        rec.mask += time.perf_counter() - t0
        if rejected:
            bitmask = loop.buffer.rows(len(rejected))
            t0 = time.perf_counter()
            words = bitmask.numpy()  # (a view: the checkers write into it)
            for j, k in enumerate(rejected):
                rows[row_ids[k]].checker.fill_mask(words, j)
            rec.mask += time.perf_counter() - t0
            sole = sole_tokens(words).tolist()
            t0 = time.perf_counter()
            index = torch.tensor(rejected, device=loop.batch.device)
            sub = x.index_select(0, index)
            apply_bitmask_(sub, bitmask, vocab_size=loop.vocab.size)
            rec.apply += time.perf_counter() - t0
            t0 = time.perf_counter()
            again = _argmax(
                shape(sub, loop.decoder, loop.params),
                None if noise is None else noise.index_select(0, index),
            ).tolist()
            for j, k in enumerate(rejected):
                row = rows[row_ids[k]]
                if sole[j] == NOTHING:
                    loop.finish(row, "dead_end")
                elif sole[j] in loop.eos:
                    loop.finish(row, "finished")
                picks[k] = again[j]
            rec.sample += time.perf_counter() - t0
        # The normalising mask is not built for accepted picks: no score.
        return picks, [math.nan] * len(picks)

    def _advance(self, flat, where, picks, free, logp, rec: StepRecord) -> None:
        """Verify drafts against the picks, append the accepted tokens, update
        checkers, finish rows, and ask for the next drafts."""
        loop = self.loop
        t0 = time.perf_counter()
        rows = loop.batch.rows
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
            if draft:
                loop.drafts.settle(loop.batch, i, row, accepted, token, rec)
            elif row.guess is not None:
                loop.drafts.observe(row, token)
            new = [*draft[:accepted], token]
            ended = token in loop.eos
            goes_on = not ended and len(row.tokens) + len(new) < loop.max_len
            # a row that goes on gives the checker its tokens once the next
            # pass is queued, and guesses then; its end, or its next draft
            # (fed in that pass), reads the checker now
            behind = goes_on and not (loop.speculative and loop.drafts.drafting)
            if row.checker is not None:
                if behind:
                    row.behind = new
                else:
                    row.checker.update(new)
            row.tokens.extend(new[:-1] if ended else new)
            loop.batch.count(i, new)
            if ended:
                loop.finish(row, "eos")
            elif not goes_on:
                loop.finish(row, "max_len")
            else:
                row.pending = [token]
                if not behind:  # (a row behind guesses once it caught up)
                    loop.drafts.propose(row)
        rec.update += time.perf_counter() - t0


def _catch_up(rows: list[Row], rec: StepRecord, drafts: Drafts) -> None:
    """Give each row's checker the tokens picked last step (``row.behind``),
    and, while ``drafts`` do not draft (a speculative call), let it guess
    the next one.
    The step calls this after the forward pass is queued: the pass needs
    only the tokens, so on a GPU the checkers advance while it computes,
    with the masks, rather than between the pick and the next pass. (A
    guess is never fed; a draft would be, so none is proposed here.)"""
    t0 = time.perf_counter()
    # (always drafting without speculation; a pass without guesses asks no checker)
    guessing = not drafts.drafting and drafts.guessing()
    for row in rows:
        if row.behind:
            row.checker.update(row.behind)
            row.behind = []
            if guessing:
                drafts.propose(row)
    rec.update += time.perf_counter() - t0


def _on(device: torch.device, values: list[int]) -> torch.Tensor:
    """``values`` as a long tensor on ``device``, copied without waiting for
    the work queued there (a plain copy to a GPU waits for its stream)."""
    return torch.tensor(values).to(device, non_blocking=True)


def _argmax(scores: torch.Tensor, noise: torch.Tensor | None) -> torch.Tensor:
    """Gumbel-max when ``noise`` is given (a sample), plain argmax otherwise."""
    return best_ids(scores if noise is None else scores + noise)
