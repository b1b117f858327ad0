"""Batch state: the live sequences ("rows") and what the model holds for them.

One attention mask covers every cache slot: rows advance by different
numbers of tokens, so right padding and rejected draft tokens stay in the
cache, masked out (see :mod:`.model`).
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ..protocols import Checker
from .decoders import Sampling
from .model import CausalLM, drop_slots
from .results import StepRecord


class Row:
    """One sequence being generated."""

    __slots__ = (
        "budget",
        "checker",
        "draft",
        "forced",
        "forced_now",
        "guess",
        "hits",
        "interventions",
        "length",
        "noise_seed",
        "pending",
        "prompt",
        "reason",
        "score",
        "skip",
        "slot",
        "tokens",
        "tries",
    )

    def __init__(self, prompt: int, slot: int, checker: Checker | None, pending: list[int]):
        self.prompt, self.slot, self.checker = prompt, slot, checker
        self.pending = pending  # accepted tokens the model has not seen yet
        self.draft: list[int] = []  # proposed tokens fed for verification
        self.budget = 0  # the most tokens the next draft may hold (see .drafts)
        self.guess: int | None = None  # the checker's next token, while not drafting
        self.hits = self.tries = 0.0  # draft tokens and guesses right / judged (decayed)
        self.tokens: list[int] = []
        self.length = 0  # attended cache slots
        self.score = 0.0
        self.interventions = 0
        self.forced = 0
        self.forced_now = 0  # length of the chain forced this step
        self.reason: str | None = None
        self.skip = False  # forced tokens appended this step: no pick
        self.noise_seed = 0  # seeds the random draws of its tokens (see loop)


class Batch:
    """The live rows in lockstep, the model's cache for them, one attention
    mask over all cache slots, and (with penalties) the tokens each row has
    seen. Row ``i`` of every tensor belongs to ``rows[i]``."""

    def __init__(self, model: CausalLM, rows: list[Row], prompts, params: Sampling):
        self.model, self.device = model, model.device
        self.rows = rows
        self.cache = None
        self.attn = torch.zeros((len(rows), 0), dtype=torch.long, device=self.device)
        self.chunk_start = 0  # first cache slot of the last forward pass
        self._ends: list[int] = []  # per row, the end of the last pass's slots it keeps
        self._timer: _ForwardTimer | None = None
        self.seen = self.counts = None
        self.params = params
        if params.penalized:
            shape_ = (len(rows), model.width)
            self.seen = torch.zeros(shape_, dtype=torch.bool, device=self.device)
            self.counts = torch.zeros(shape_, dtype=torch.float32, device=self.device)
            for i, row in enumerate(rows):
                ids = torch.tensor(prompts[row.prompt], device=self.device)
                self.seen[i, ids] = True

    def forward(self, chunks: list[list[int]], where: list[tuple[int, int]]) -> torch.Tensor:
        """Feed row ``i`` the tokens ``chunks[i]`` (right-padded) in one pass;
        the logits at ``where``'s (row, position in its chunk) pairs,
        ``[len(where), width]``, in that order (a model that keeps positions
        computes no others; the caller may write to them). On a GPU the pass
        is queued, not waited for: the caller fills masks while it runs, and
        the first read of a result waits (:meth:`time_forward` then records
        its time)."""
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
        # (every index tensor is on the device before the pass is queued: a
        # blocking copy after it would wait for the pass)
        rows, columns = np.array(where, dtype=np.int64).reshape(-1, 2).T
        options = {}
        keep = np.unique(columns)
        if getattr(self.model, "keeps_positions", False) and len(keep) < width:
            options["keep"] = torch.from_numpy(keep).to(dev)
            columns = np.searchsorted(keep, columns)
        one_each = len(rows) == len(chunks) and (rows == np.arange(len(chunks))).all()
        if one_each and (columns == columns[0]).all():
            at = (slice(None), int(columns[0]))  # a view: no copy of the logits
        else:
            at = (torch.from_numpy(rows).to(dev), torch.from_numpy(columns).to(dev))
        self.attn = torch.cat([self.attn, torch.from_numpy(attn).to(dev)], dim=1)
        ids_, pos_ = torch.from_numpy(ids).to(dev), torch.from_numpy(pos).to(dev)
        self._timer = _ForwardTimer(dev)
        logits, self.cache = self.model.forward(ids_, self.attn, pos_, self.cache, **options)
        self._timer.stop()
        self.chunk_start = self.attn.shape[1] - width
        self._ends = [self.chunk_start + len(chunk) for chunk in chunks]  # slots each row keeps
        for row in self.rows:
            row.length += len(row.pending)  # draft slots count once verified
            row.skip = False
        return logits[at]

    def time_forward(self, rec: StepRecord) -> None:
        """``rec.forward``: the last pass's time (on a GPU, between CUDA
        events around it, waiting for the pass if nothing has yet)."""
        rec.forward = self._timer.seconds()

    def hide_slots(self, index: int, start: int, stop: int) -> None:
        """Mask cache slots ``start:stop`` of the last pass out of row
        ``index``'s attention."""
        self.attn[index, start:stop] = 0
        if stop >= self._ends[index]:
            self._ends[index] = min(self._ends[index], start)

    def trim(self) -> None:
        """Drop the last pass's trailing slots that no row keeps (rejected
        drafts, padding), where the model can: a cache without holes at its
        end keeps the attention mask all ones, which attention takes a
        faster path for."""
        end = max(self._ends, default=0)
        count = self.attn.shape[1] - end
        if count <= 0 or not self.rows:
            return
        cache = drop_slots(self.model, self.cache, count)
        if cache is not None:
            self.cache, self.attn = cache, self.attn[:, :end]

    def count(self, index: int, tokens: list[int]) -> None:
        """Record ``tokens`` as seen by row ``index`` (penalties)."""
        if self.seen is None or not tokens:
            return
        ids = torch.tensor(tokens, device=self.device)
        self.seen[index, ids] = True
        self.counts[index].index_put_((ids,), torch.ones_like(ids, dtype=torch.float32), True)

    def select(self, rows: list[Row], parents: list[int]) -> None:
        """Make ``rows`` the batch; ``rows[k]`` continues old row ``parents[k]``
        (dropping finished rows, or reordering beams)."""
        self.rows = rows
        if not rows:
            return
        index = torch.tensor(parents, device=self.device)
        self.cache = self.model.select_rows(self.cache, index)
        self.attn = self.attn.index_select(0, index)
        self._ends = [self._ends[p] for p in parents]
        if self.seen is not None:
            self.seen = self.seen.index_select(0, index)
            self.counts = self.counts.index_select(0, index)


class _ForwardTimer:
    """Times one forward pass: CUDA events on a GPU (the pass runs while the
    CPU goes on), the wall clock around the call on a CPU (where it is the
    pass)."""

    def __init__(self, device: torch.device):
        self._events = None
        if device.type == "cuda":
            self._events = (
                torch.cuda.Event(enable_timing=True),
                torch.cuda.Event(enable_timing=True),
            )
            self._events[0].record()
        self._start, self._seconds = time.perf_counter(), 0.0

    def stop(self) -> None:
        if self._events is not None:
            self._events[1].record()
        else:
            self._seconds = time.perf_counter() - self._start

    def seconds(self) -> float:
        if self._events is None:
            return self._seconds
        start, end = self._events
        end.synchronize()
        return start.elapsed_time(end) / 1e3
