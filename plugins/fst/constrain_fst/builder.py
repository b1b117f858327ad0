"""Large FSTs assembled as arrays and handed to OpenFst in one piece.

T_V holds a trie of most of the vocabulary twice over (the byte spellings
and the head spellings): built one ``add_arc`` call at a time it cost about
0.5 s on Llama-3, most of it Python. Here arcs are collected in arrays —
the tries computed with numpy from the sorted token bytes — and the whole
FST is handed to OpenFst at once (``arcs.const_fst``).
"""

from __future__ import annotations

import numpy as np
import pynini

from .arcs import const_fst

#: Tokens longer than this many bytes are added to a trie of their own (a
#: second path from the same entry: exact, and rare).
WIDTH = 32


class FstBuilder:
    """States and unweighted arcs collected in lists and arrays; ``fst()``
    returns the pynini FST (its start, final states and arcs as added)."""

    def __init__(self) -> None:
        self.num_states = 0
        self.start = -1
        self._finals: list[int] = []
        self._arcs: list[tuple[int, int, int, int]] = []
        self._blocks: list[np.ndarray] = []  # (k, 4) int64 arrays of arcs

    def add_state(self) -> int:
        self.num_states += 1
        return self.num_states - 1

    def add_states(self, count: int) -> int:
        """``count`` new states; returns the first one's number."""
        first = self.num_states
        self.num_states += count
        return first

    def set_start(self, state: int) -> None:
        self.start = state

    def set_final(self, state: int) -> None:
        self._finals.append(state)

    def add_arc(self, source: int, ilabel: int, olabel: int, target: int) -> None:
        self._arcs.append((source, ilabel, olabel, target))

    def add_arcs(self, source, ilabel, olabel, target) -> None:
        """Arcs given as equally long arrays."""
        block = np.stack([np.asarray(a, dtype=np.int64) for a in (source, ilabel, olabel, target)])
        self._blocks.append(block.T)

    def fst(self) -> pynini.Fst:
        arcs = np.concatenate([np.array(self._arcs, dtype=np.int64).reshape(-1, 4), *self._blocks])
        arcs = arcs[np.argsort(arcs[:, 0], kind="stable")]
        return const_fst(self.start, self.num_states, self._finals, *arcs.T)


def add_tries(
    builder: FstBuilder,
    entries: np.ndarray,
    exit: int,
    spellings: list[bytes],
    labels,
    byte_labels: np.ndarray | None = None,
    next_group: int | None = None,
) -> tuple[dict[int, np.ndarray], int | None]:
    """Spell each ``spellings[i]`` from state ``entries[i]`` as a trie of
    input-epsilon arcs writing its bytes (output label ``byte_labels[b]``,
    by default ``b + 1``), sharing prefixes among spellings with the same
    entry; the last arc reads ``labels[i]`` and goes to ``exit``.
    Spellings are not empty.

    With ``next_group``, spellings that are the same (same entry, same
    labels) share their last arc, which reads a new group label numbered
    from ``next_group``; returns the groups (label → positions in
    ``spellings``) and the next free label."""
    entries = np.asarray(entries, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    mapping = byte_labels if byte_labels is not None else np.arange(1, 257, dtype=np.int64)
    lengths = np.fromiter(map(len, spellings), dtype=np.int64, count=len(spellings))
    long = lengths > WIDTH
    groups: dict[int, np.ndarray] = {}
    for i in np.flatnonzero(long).tolist():  # rare: a path of their own
        state = int(entries[i])
        for byte in spellings[i][:-1]:
            nxt = builder.add_state()
            builder.add_arc(state, 0, int(mapping[byte]), nxt)
            state = nxt
        builder.add_arc(state, int(labels[i]), int(mapping[spellings[i][-1]]), exit)
    keep = np.flatnonzero(~long)
    if not len(keep):
        return groups, next_group
    n = len(keep)
    # the spellings as rows of output labels (0 past the end), sorted by (entry, labels)
    rows = np.zeros((n, WIDTH), dtype=np.int32)
    flat = np.frombuffer(b"".join(spellings[i] for i in keep.tolist()), dtype=np.uint8)
    size = lengths[keep]
    row_of = np.repeat(np.arange(n), size)
    column = np.arange(len(flat)) - np.repeat(np.cumsum(size) - size, size)
    rows[row_of, column] = mapping[flat]
    order = np.lexsort([rows[:, c] for c in range(WIDTH - 1, -1, -1)] + [entries[keep]])
    rows, size, keep = rows[order], size[order], keep[order]
    entry, label = entries[keep], labels[keep]
    # shared prefix with the previous row (0 across entries)
    differ = rows[1:] != rows[:-1]
    common = np.where(differ.any(axis=1), differ.argmax(axis=1), WIDTH)
    common = np.minimum(common, np.minimum(size[1:], size[:-1]))
    common = np.concatenate([[0], np.where(entry[1:] == entry[:-1], common, 0)])
    # node (i, d): after the first d labels of row i, for 1 <= d < size[i];
    # the previous row's where it has that node (d within the shared prefix
    # and short of its own end), else new
    depth = np.arange(1, WIDTH)
    inside = depth[None, :] < size[:, None]
    before = np.concatenate([[0], size[:-1]])
    shared = (depth[None, :] <= common[:, None]) & (depth[None, :] < before[:, None])
    new = inside & ~shared
    first = builder.add_states(int(new.sum()))
    ids = np.full(new.shape, -1, dtype=np.int32)
    ids[new] = first + np.arange(int(new.sum()), dtype=np.int32)
    row = np.arange(n, dtype=np.int32)[:, None]
    maker = np.maximum.accumulate(np.where(new, row, np.int32(-1)), axis=0)
    node = np.where(inside, ids[np.maximum(maker, 0), np.arange(WIDTH - 1)[None, :]], -1)
    # an arc into each new node from its parent (the entry at depth 1)
    parent = np.concatenate([entry[:, None], node[:, :-1]], axis=1)
    r, c = np.nonzero(new)
    builder.add_arcs(parent[r, c], np.zeros(len(r)), rows[r, c], ids[r, c])
    # the last label's arc reads the token's label (or its group's), from the
    # node before it (or the entry)
    last = size - 1
    source = np.where(last > 0, node[np.arange(n), np.maximum(last - 1, 0)], entry)
    heads = np.ones(n, dtype=bool)
    if next_group is not None:  # a run of equal spellings: one arc, one group
        heads[1:] = ~((common[1:] == size[1:]) & (size[1:] == size[:-1]))
        run = np.cumsum(heads) - 1
        sizes = np.bincount(run)
        several = np.flatnonzero(sizes > 1)
        group_label = np.zeros(len(sizes), dtype=np.int64)
        group_label[several] = next_group + np.arange(len(several))
        label = np.where(sizes[run] > 1, group_label[run], label)
        grouped = np.flatnonzero(sizes[run] > 1)  # rows of the runs with several
        starts = np.flatnonzero(np.diff(run[grouped], prepend=-1))
        if len(several):
            pieces = np.split(keep[grouped], starts[1:])
            groups.update(zip(group_label[several].tolist(), pieces, strict=True))
        next_group += len(several)
    at = np.flatnonzero(heads)
    builder.add_arcs(source[at], label[at], rows[at, last[at]], np.full(len(at), exit))
    return groups, next_group
