"""Masking for the loop: the packed bitmask buffer, filling it from the
checkers (drafts included), and reading each filled row once to learn whether
the constraint leaves a choice, forces one token, or allows nothing."""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

from ..masks import bitmask_words
from .batch import Row
from .results import StepRecord

#: ``sole_tokens`` for a row that allows nothing (a dead end).
NOTHING = -1
#: ``sole_tokens`` for a row that allows more than one token (a choice).
SEVERAL = -2


def sole_tokens(words: np.ndarray) -> np.ndarray:
    """For each row of packed int32 mask ``words`` (2-D): the one allowed
    id, :data:`NOTHING` when none is allowed, :data:`SEVERAL` otherwise.
    Rows of an even number of words (C-contiguous, little-endian) are read
    as 64-bit words: half the words to scan (Llama-3's 4,008-word rows at
    batch 16: 31 -> 19 µs), the same answer. One row (batch 1, a forced
    chain's next token) is read with one ``flatnonzero`` (small vocabulary
    9 -> 2 µs, Llama-3 10 -> 5 µs), and a batch whose every row has two
    nonzero words is answered from their count."""
    if words.shape[1] % 2 == 0 and words.flags.c_contiguous and sys.byteorder == "little":
        wide, bits = words.view(np.uint64), 64
    else:
        wide, bits = words.view(np.uint32), 32
    if wide.shape[0] == 1:  # (a batch of one, a forced chain's row: fewer numpy calls)
        return np.array([_sole_token(wide[0], bits)])
    nonzero = wide != 0
    count = np.count_nonzero(nonzero, axis=1)
    if count.min(initial=2) > 1:  # (the usual step: a choice in every row)
        return np.full(count.shape[0], SEVERAL)
    out = np.where(count == 0, NOTHING, SEVERAL)
    one = np.flatnonzero(count == 1)  # one nonzero word: one token if it has one bit
    if one.size:
        first = nonzero[one].argmax(axis=1)
        word = wide[one, first]
        single = (word & (word - word.dtype.type(1))) == 0
        if single.any():
            # log2 of a power of two is exact in float64 (2**63 included)
            bit = np.log2(word[single].astype(np.float64)).astype(np.int64)
            out[one[single]] = first[single] * bits + bit
    return out


def _sole_token(row: np.ndarray, bits: int) -> int:
    """``sole_tokens`` of one row of unsigned ``bits``-bit words."""
    nonzero = np.flatnonzero(row)
    if nonzero.size != 1:
        return NOTHING if nonzero.size == 0 else SEVERAL
    at = int(nonzero[0])
    word = int(row[at])
    return SEVERAL if word & (word - 1) else at * bits + word.bit_length() - 1


class MaskBuffer:
    """One packed bitmask reused across steps (pinned for a CUDA model, so it
    moves without a copy through pageable memory), and a scratch row."""

    def __init__(self, vocab_size: int, device: torch.device):
        self.words = bitmask_words(vocab_size)
        self.device = device
        self._bitmask = torch.zeros((0, self.words), dtype=torch.int32)
        self._scratch = np.zeros((1, self.words), dtype=np.int32)

    def rows(self, n: int) -> torch.Tensor:
        """The first ``n`` rows (contents undefined until filled)."""
        if self._bitmask.shape[0] < n:
            pin = self.device.type == "cuda"
            self._bitmask = torch.zeros(
                (max(n, 2 * self._bitmask.shape[0]), self.words), dtype=torch.int32, pin_memory=pin
            )
        return self._bitmask[:n]

    def sole_token(self, checker) -> int:
        """``sole_tokens`` of ``checker``'s mask now (filled into the scratch row)."""
        checker.fill_mask(self._scratch, 0)
        return int(sole_tokens(self._scratch)[0])


def fill_positions(rows: list[Row], compiled, bitmask: torch.Tensor, rec: StepRecord) -> None:
    """Masks for every position whose logits the step reads: one per row, and
    one after each draft token (filled by advancing the checker along the
    draft and rolling it back). A ``compiled`` artifact fills a draft-free
    batch at once (``fill_masks``: a backend may do it in parallel). The
    checkers write into a numpy view of ``bitmask`` (a CPU tensor): the
    protocol takes both, and a view is checked once, not once per row."""
    t0 = time.perf_counter()
    bitmask = bitmask.numpy()
    if all(not row.draft for row in rows):
        checkers = [row.checker for row in rows]
        if compiled is not None:
            compiled.fill_masks(checkers, bitmask)
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
