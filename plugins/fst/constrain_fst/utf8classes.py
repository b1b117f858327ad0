"""UTF-8 byte classes: tokens that differ only in their non-ASCII bytes, spelled once.

A constraint that treats non-ASCII characters alike — ``[^"\\n]``, ``.``,
JSON strings — leaves a byte automaton in which every byte of one of the
UTF-8 intervals below (continuation bytes ``80-8F``, ``90-9F``, ``A0-BF``,
and the lead bytes by the ranges their continuations take) leads from a
state to one same state. When that holds at *every* state, a token's path
depends only on its ASCII bytes and on the interval of each other byte, so
T_V can spell non-ASCII bytes by their interval's label and read all tokens
with the same spelling with one *class group* label. The wildcard terminals
do not cover tokens that are not whole characters of their class (Llama-3's
1,352 partial UTF-8 tokens; each wide state of a quoted text spelled them
one by one); these groups do.

Exact by construction: the acceptor gets an interval arc wherever the
interval's bytes go (``class_arcs``), and the spelling is used only when
``uniform`` holds at every state — otherwise T_V spells bytes, as before.
"""

from __future__ import annotations

import numpy as np

#: The non-ASCII byte intervals; the label of interval i is ``CLASS + i``.
INTERVALS = (
    (0x80, 0x8F),
    (0x90, 0x9F),
    (0xA0, 0xBF),
    (0xC0, 0xC1),
    (0xC2, 0xDF),
    (0xE0, 0xE0),
    (0xE1, 0xEC),
    (0xED, 0xED),
    (0xEE, 0xEF),
    (0xF0, 0xF0),
    (0xF1, 0xF3),
    (0xF4, 0xF4),
    (0xF5, 0xFF),
)
CLASS = 1 << 20  # above the bytes, END and the wildcard labels; below the parentheses

#: Output label per byte: ``b + 1`` for ASCII, its interval's label otherwise.
BYTE_LABELS = np.arange(1, 257, dtype=np.int64)
for _i, (_lo, _hi) in enumerate(INTERVALS):
    BYTE_LABELS[_lo : _hi + 1] = CLASS + _i


def uniform(table: np.ndarray) -> bool:
    """Whether at every state each interval's bytes lead to one same state
    (or are all dead): ``table`` is the acceptor's ``(states, 256)`` byte table."""
    for lo, hi in INTERVALS:
        block = table[:, lo : hi + 1]
        if not (block.min(axis=1) == block.max(axis=1)).all():
            return False
    return True


def class_arcs(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An arc per state and live interval, to where the interval's bytes go,
    as (source, label, target) arrays (call only when ``uniform(table)``)."""
    found = []
    for i, (lo, _) in enumerate(INTERVALS):
        q = np.flatnonzero(table[:, lo] >= 0)
        found.append((q, np.full(len(q), CLASS + i, dtype=np.int64), table[q, lo]))
    return tuple(np.concatenate(part).astype(np.int64) for part in zip(*found, strict=True))
