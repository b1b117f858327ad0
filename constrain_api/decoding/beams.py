"""One step of beam search (``beam``, ``beam_sample``): expand every beam,
keep the ``n`` best continuations per prompt, move finished ones to the
prompt's hypotheses."""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from ..masks import apply_bitmask_
from .batch import Row
from .decoders import apply_penalties_, best_ids, gumbel_rows, shape
from .masking import NOTHING, fill_positions, sole_tokens
from .results import Generation, StepRecord


class BeamStep:
    """Beam search for ``loop``: its settings (``vocab``, ``decoder``,
    ``params``, ``max_len``, ``eos``, ``constrained``, ``compiled``), its
    ``batch`` and ``buffer``, the hypotheses ``loop.hyps[prompt]``, the
    per-prompt random generators, and ``loop.finish(row, reason)``."""

    def __init__(self, loop: Any):
        self.loop = loop

    def __call__(self, logits: torch.Tensor, rec: StepRecord) -> None:
        """Expand every beam by its best (or sampled) allowed tokens, keep the
        ``n`` best continuations per prompt, and move finished ones to the
        prompt's hypotheses. Scores only fall, so a prompt is done once ``n``
        hypotheses beat every live beam."""
        loop, batch = self.loop, self.loop.batch
        rows, n, dev = batch.rows, loop.decoder.n, batch.device
        only_eos = [False] * len(rows)
        if loop.constrained:
            bitmask = loop.buffer.rows(len(rows))
            fill_positions(rows, loop.compiled, bitmask, rec)
            sole = sole_tokens(bitmask.numpy()).tolist()
            for i, row in enumerate(rows):
                if sole[i] == NOTHING:
                    loop.finish(row, "dead_end")
                only_eos[i] = sole[i] in loop.eos
        t0 = time.perf_counter()
        x = logits  # row i's, after its last pending token
        if batch.seen is not None:
            apply_penalties_(x, batch.seen, batch.counts, loop.params)
        # the model's own pick, over the vocabulary (the mask refuses the
        # columns past it too), taken before the mask is applied to x in place
        x[:, loop.vocab.size :] = float("-inf")
        free = best_ids(shape(x, loop.decoder, loop.params))
        rec.sample += time.perf_counter() - t0
        if loop.constrained:
            t0 = time.perf_counter()
            apply_bitmask_(x, bitmask, vocab_size=loop.vocab.size)  # (queued on a GPU)
            rec.apply += time.perf_counter() - t0
        t0 = time.perf_counter()
        shaped = shape(x, loop.decoder, loop.params)
        logp = torch.log_softmax(shaped, dim=-1)
        base = torch.tensor([row.score for row in rows], device=dev, dtype=logp.dtype)
        total = base[:, None] + logp
        width = min(2 * n, total.shape[1])
        if loop.decoder.kind == "beam":
            values, ids = torch.topk(total, width, dim=-1)
        else:  # sample the candidates (Gumbel top-k), then rank them by score
            noise = gumbel_rows(shaped, [loop.prompt_generators[row.prompt] for row in rows])
            _, ids = torch.topk(shaped + noise, width, dim=-1)
            values = total.gather(1, ids)
        changed = (free != best_ids(shaped)).tolist()
        values, ids = values.tolist(), ids.tolist()
        rec.sample += time.perf_counter() - t0
        t0 = time.perf_counter()
        by_prompt: dict[int, list[tuple[float, int, int]]] = {}
        for i, row in enumerate(rows):
            if row.reason is None:
                entries = by_prompt.setdefault(row.prompt, [])
                entries.extend((v, i, t) for v, t in zip(values[i], ids[i], strict=True))
            rec.interventions += changed[i]
        children: list[tuple[Row, int]] = []
        for prompt, entries in by_prompt.items():
            kept = self._select(prompt, entries, only_eos, changed)
            for value, i, token in kept:
                child = self._child(rows[i], token, value, changed[i])
                if child is not None:
                    children.append((child, i))
        batch.select([child for child, _ in children], [i for _, i in children])
        for k, child in enumerate(batch.rows):
            batch.count(k, child.pending)
        rec.update += time.perf_counter() - t0

    def _select(self, prompt, entries, only_eos, changed):
        """The live continuations to keep for ``prompt``; EOS candidates ranked
        among them become hypotheses."""
        loop = self.loop
        n = loop.decoder.n
        hyps = loop.hyps[prompt]
        kept = []
        for value, i, token in sorted(entries, key=lambda e: -e[0]):
            if value == -math.inf:
                break
            if token in loop.eos:
                row = loop.batch.rows[i]
                reason = "finished" if only_eos[i] else "eos"
                hyps.append(
                    Generation(
                        prompt,
                        list(row.tokens),
                        loop.vocab.decode(row.tokens),
                        reason,
                        True if loop.constrained else None,
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

    def _child(self, parent: Row, token: int, score: float, changed: bool) -> Row | None:
        """A beam continuing ``parent`` with ``token``; ``None`` when it is
        finished at once (``max_len``) and became a hypothesis."""
        child = Row(parent.prompt, 0, None, [token])
        if parent.checker is not None:
            child.checker = parent.checker.fork()
            child.checker.update([token])
        child.tokens = [*parent.tokens, token]
        child.length = parent.length
        child.score = score
        child.interventions = parent.interventions + changed
        if len(child.tokens) >= self.loop.max_len:
            self.loop.finish(child, "max_len")
            return None
        return child
