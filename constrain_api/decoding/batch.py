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
        "behind",
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
        "sources",
        "tokens",
        "tries",
    )

    def __init__(self, prompt: int, slot: int, checker: Checker | None, pending: list[int]):
        self.prompt, self.slot, self.checker = prompt, slot, checker
        self.pending = pending  # accepted tokens the model has not seen yet
        self.draft: list[int] = []  # proposed tokens fed for verification
        self.budget = 0  # the most tokens the next draft may hold (see .drafts)
        self.guess: int | None = None  # the checker's next token, while not drafting
        self.sources = None  # where its drafts come from (.drafts.Sources), if any
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
        self.behind: list[int] = []  # accepted tokens the checker is given next step


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
        sizes = np.fromiter(map(len, chunks), np.int64, len(chunks))
        lengths = np.fromiter((row.length for row in self.rows), np.int64, len(self.rows))
        inputs = _lay_out(chunks, sizes, lengths)  # ids, attention, positions
        width = inputs.shape[2]
        dev = self.device
        # (every tensor is on the device before the pass is queued: a blocking
        # copy after it would wait for the pass)
        options = {}
        keeps = getattr(self.model, "keeps_positions", False)
        keep, at = _reading_plan(where, len(chunks), width, keeps)
        if keep is not None:
            options["keep"] = torch.from_numpy(keep).to(dev)
        if not isinstance(at[0], slice):
            at = (torch.from_numpy(at[0]).to(dev), torch.from_numpy(at[1]).to(dev))
        ids, attn, pos = torch.from_numpy(inputs).to(dev)  # (one copy)
        self.attn = torch.cat([self.attn, attn], dim=1)
        self._timer = _ForwardTimer(dev)
        logits, self.cache = self.model.forward(ids, self.attn, pos, self.cache, **options)
        self._timer.stop()
        self.chunk_start = self.attn.shape[1] - width
        self._ends = (self.chunk_start + sizes).tolist()  # the slots each row keeps
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


def _lay_out(chunks: list[list[int]], sizes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[3, B, width]`` int64: the chunks right-padded (token 0), their
    attention (1 on a chunk's tokens) and positions (a row's attended slots
    before each; padding repeats the last)."""
    width = int(sizes.max())
    if width == 1:  # one token a row: the usual step
        ids = np.array(chunks, dtype=np.int64)
        return np.stack([ids, np.ones_like(ids), lengths[:, None]])
    steps = np.arange(width)
    attended = steps < sizes[:, None]
    ids = np.zeros((len(chunks), width), dtype=np.int64)
    ids[attended] = np.concatenate(chunks)  # (row by row, as the chunks)
    positions = lengths[:, None] + np.minimum(steps, sizes[:, None] - 1)
    return np.stack([ids, attended.astype(np.int64), positions])


def _reading_plan(where: list[tuple[int, int]], rows: int, width: int, keeps: bool):
    """``(keep, at)``: the positions to ask a model that ``keeps`` positions
    for (``None``: all), and the index into its logits of ``where``'s
    pairs: a row slice and a column where each row reads one position at
    the same column (a view), else row and column arrays."""
    if width == 1 and len(where) == rows:  # the usual step: (i, 0) for each row
        return None, (slice(None), 0)
    index, columns = np.array(where, dtype=np.int64).reshape(-1, 2).T
    keep = np.unique(columns)
    if keeps and len(keep) < width:
        columns = np.searchsorted(keep, columns)
    else:
        keep = None
    if len(index) == rows and (index == np.arange(rows)).all() and (columns == columns[0]).all():
        return keep, (slice(None), int(columns[0]))
    return keep, (index, columns)


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
