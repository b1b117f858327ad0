"""The subterminal trees' inner loops, compiled by numba (nopython, no GIL).

A tree is a walk over the vocabulary's byte trie (nodes in depth-first
preorder, so a node's subtree is the range ``n .. subtree_end[n] - 1``),
where every trie node gets the walk set of its parent stepped by its byte:
a lookup in the ``steps`` memo table. These loops do the lookups, skip the
subtrees of dead nodes, hand the pairs the table does not know yet back to
Python (which computes them and resumes the walk there), gather the tokens
of the live nodes and group them (packed bitmask rows, or a small group's
token ids). Python would pay an interpreter step per trie node (274k on
Llama-3); numpy a dozen calls per trie level whatever its live width. numba
compiles them once per process (:func:`warm_up`, called with the
vocabulary's set-up).
"""

from __future__ import annotations

import numba
import numpy as np

#: ``steps`` entries: a pair whose walk set dies, and a pair not computed yet
DEAD = -1
UNKNOWN = -2


@numba.njit(nogil=True, cache=False)
def walk_subtrees(
    los: np.ndarray,
    lo_sets: np.ndarray,
    depth: np.ndarray,
    edge: np.ndarray,
    subtree_end: np.ndarray,
    parent: np.ndarray,
    plain: np.ndarray,
    mixed: np.ndarray,
    steps: np.ndarray,
    absorbing: np.ndarray,
    path: np.ndarray,
    skippable: np.ndarray,
    node_set: np.ndarray,
    runs: np.ndarray,
    n_runs: int,
    skips: np.ndarray,
    n_skips: int,
    pending: np.ndarray,
    pending_sets: np.ndarray,
    waiting: np.ndarray,
    new_sets: np.ndarray,
) -> tuple[int, int, int, int]:
    """Walk the subtree of each node ``los[i]``, whose parent is in set ``lo_sets[i]``.

    Sets ``node_set[n]`` of the nodes reached; appends the ranges of
    consecutive live nodes to ``runs`` (as ``lo, hi`` pairs, from entry
    ``n_runs``; disjoint and not empty, so at most one per node), and the
    nodes whose (parent set, byte) pair ``steps`` does not know to
    ``pending``, their parent sets to ``pending_sets`` (their subtrees are
    left for a later call), and each of those sets once to ``new_sets``
    (marking it in ``waiting``, which the caller clears: thousands of
    pending nodes wait on a few sets). Returns ``(n_pending, n_runs,
    n_skips, n_new)``.
    The sets of the path being walked are kept by depth in ``path`` (one
    more entry than the trie's depth): in preorder, a node's parent is the
    last node met one level up.

    Slices: below a node whose bytes are plain string characters
    (``plain``) and whose set keeps every such string in itself
    (``absorbing``), a subtree whose tokens are all plain (not ``mixed``)
    is not walked: every token in it ends in that set. It is appended to
    ``skips`` as ``lo, hi, set`` (from entry ``n_skips``).
    """
    n_pending = n_new = 0
    for i in range(los.size):
        m = los[i]
        hi = subtree_end[m]
        path[depth[m] - 1] = lo_sets[i]
        skippable[depth[m] - 1] = absorbing[lo_sets[i]] and plain[parent[m]]
        run = m
        while m < hi:
            d = depth[m]
            ps = path[d - 1]
            if skippable[d - 1] and not mixed[m]:  # a slice: its tokens end in ps
                if m > run:
                    runs[n_runs] = run
                    runs[n_runs + 1] = m
                    n_runs += 2
                skips[n_skips] = m
                skips[n_skips + 1] = subtree_end[m]
                skips[n_skips + 2] = ps
                n_skips += 3
                m = subtree_end[m]
                run = m
                continue
            s = steps[ps, edge[m]]
            path[d] = s
            node_set[m] = s
            if s >= 0:
                skippable[d] = absorbing[s] and plain[m]
                m += 1
            else:  # the subtree is dead, or waits for the pair's step
                if s == UNKNOWN:
                    pending[n_pending] = m
                    pending_sets[n_pending] = ps
                    n_pending += 1
                    if not waiting[ps]:
                        waiting[ps] = True
                        new_sets[n_new] = ps
                        n_new += 1
                if m > run:
                    runs[n_runs] = run
                    runs[n_runs + 1] = m
                    n_runs += 2
                m = subtree_end[m]
                run = m
        if m > run:
            runs[n_runs] = run
            runs[n_runs + 1] = m
            n_runs += 2
    return n_pending, n_runs, n_skips, n_new


@numba.njit(nogil=True, cache=False)
def gather_tokens(
    runs: np.ndarray,
    skips: np.ndarray,
    token_offsets: np.ndarray,
    token_ids: np.ndarray,
    token_node: np.ndarray,
    node_set: np.ndarray,
    num_sets: int,
    tokens: np.ndarray,
    local: np.ndarray,
) -> tuple[int, np.ndarray, int]:
    """Write the tokens of the nodes in ``runs`` to ``tokens`` and, to
    ``local``, each one's index among the distinct sets they end in, and
    that index for each slice of ``skips`` to ``skips[i + 2]`` (in place of
    its set: :func:`pack_groups` packs a slice's tokens from the trie);
    returns the tokens' count, those sets (each below ``num_sets``), in
    order of first appearance, and the slices' tokens' count. A run's
    tokens are consecutive in the trie's ``token_ids`` (preorder)."""
    remap = np.full(num_sets, -1, dtype=np.int32)
    found = np.empty(num_sets, dtype=np.int32)
    num_found = 0
    k = sliced = 0
    for i in range(0, skips.size, 3):
        sliced += token_offsets[skips[i + 1]] - token_offsets[skips[i]]
        s = skips[i + 2]
        if remap[s] < 0:
            remap[s] = num_found
            found[num_found] = s
            num_found += 1
        skips[i + 2] = remap[s]
    for i in range(0, runs.size, 2):
        for j in range(token_offsets[runs[i]], token_offsets[runs[i + 1]]):
            s = node_set[token_node[j]]
            if remap[s] < 0:
                remap[s] = num_found
                found[num_found] = s
                num_found += 1
            tokens[k] = token_ids[j]
            local[k] = remap[s]
            k += 1
    return k, found[:num_found], sliced


@numba.njit(nogil=True, cache=False)
def pack_groups(
    tokens: np.ndarray,
    token_set: np.ndarray,
    skips: np.ndarray,
    token_offsets: np.ndarray,
    token_ids: np.ndarray,
    group_ptr: np.ndarray,
    group_ids: np.ndarray,
    num_groups: int,
    words: int,
    base_set: int,
    base: np.ndarray,
    few: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The groups' tokens: token ``tokens[i]`` (in local set
    ``token_set[i]``) belongs to groups ``group_ids[group_ptr[s]:group_ptr[s + 1]]``;
    so do the tokens of the trie nodes ``skips[i] .. skips[i + 1] - 1``
    for local set ``s = skips[i + 2]``. The groups of local set
    ``base_set`` (``-1``: none) also hold the packed row ``base`` (the
    tokens of that set's slices, not unpacked again).

    Returns ``(rows, row_of, offsets, ids)``: a group of at most ``few``
    tokens (not a base group) as its token ids ``ids[offsets[g]:offsets[g + 1]]``,
    any other as the packed row ``rows[row_of[g]]`` (``row_of[g]`` is ``-1``
    for the first kind). Most groups hold a handful of tokens: a packed
    row each would be a vocabulary's bits to clear, keep and OR."""
    counts = np.zeros(num_groups, dtype=np.int64)
    for i in range(tokens.size):
        s = token_set[i]
        for g in range(group_ptr[s], group_ptr[s + 1]):
            counts[group_ids[g]] += 1
    for i in range(0, skips.size, 3):
        s = skips[i + 2]
        if s == base_set:
            continue
        n = token_offsets[skips[i + 1]] - token_offsets[skips[i]]
        for g in range(group_ptr[s], group_ptr[s + 1]):
            counts[group_ids[g]] += n
    if base_set >= 0:
        for g in range(group_ptr[base_set], group_ptr[base_set + 1]):
            counts[group_ids[g]] = few + 1
    row_of = np.full(num_groups, -1, dtype=np.int32)
    offsets = np.zeros(num_groups + 1, dtype=np.int32)
    num_rows = 0
    for g in range(num_groups):
        if counts[g] > few:
            row_of[g] = num_rows
            num_rows += 1
            offsets[g + 1] = offsets[g]
        else:
            offsets[g + 1] = offsets[g] + counts[g]
    rows = np.zeros((num_rows, words), dtype=np.uint32)
    ids = np.empty(offsets[num_groups], dtype=np.int32)
    fill = offsets[:-1].copy()
    if base_set >= 0:
        for g in range(group_ptr[base_set], group_ptr[base_set + 1]):
            rows[row_of[group_ids[g]], :] = base
    for i in range(tokens.size):
        t = tokens[i]
        s = token_set[i]
        for g in range(group_ptr[s], group_ptr[s + 1]):
            k = group_ids[g]
            if row_of[k] >= 0:
                rows[row_of[k], t >> 5] |= np.uint32(1) << np.uint32(t & 31)
            else:
                ids[fill[k]] = t
                fill[k] += 1
    # (the same branch as above, written out: a helper called per token,
    # even inlined, made the MaskBench steps' tree builds 2.5 times slower)
    for i in range(0, skips.size, 3):
        s = skips[i + 2]
        if s == base_set:
            continue
        for g in range(group_ptr[s], group_ptr[s + 1]):
            k = group_ids[g]
            for j in range(token_offsets[skips[i]], token_offsets[skips[i + 1]]):
                t = token_ids[j]
                if row_of[k] >= 0:
                    rows[row_of[k], t >> 5] |= np.uint32(1) << np.uint32(t & 31)
                else:
                    ids[fill[k]] = t
                    fill[k] += 1
    return rows, row_of, offsets, ids


@numba.njit(nogil=True, cache=False)
def set_bits(row: np.ndarray, ids: np.ndarray) -> None:
    """Set the bits of tokens ``ids`` in the packed row ``row``."""
    for i in range(ids.size):
        t = ids[i]
        row[t >> 5] |= np.uint32(1) << np.uint32(t & 31)


@numba.njit(nogil=True, cache=False)
def plain_nodes(
    parent: np.ndarray, edge: np.ndarray, table: np.ndarray, accepting: np.ndarray, start: int
) -> np.ndarray:
    """Whether each trie node's bytes are in the language of the DFA
    ``table``/``accepting``/``start`` (nodes in preorder: a parent first)."""
    n = parent.size
    state = np.empty(n, dtype=np.int32)
    out = np.zeros(n, dtype=np.bool_)
    state[0] = start
    out[0] = start >= 0 and accepting[start]
    for m in range(1, n):
        ps = state[parent[m]]
        s = table[ps, edge[m]] if ps >= 0 else -1
        state[m] = s
        out[m] = s >= 0 and accepting[s]
    return out


def warm_up() -> None:
    """Compile the kernels for the dtypes and flags the trees use (once per process)."""

    def frozen(a: np.ndarray) -> np.ndarray:
        a.flags.writeable = False
        return a

    def i32(*values: int) -> np.ndarray:
        return np.array(values, dtype=np.int32)

    def flags(*values: bool) -> np.ndarray:
        return frozen(np.array(values, dtype=np.bool_))

    depth, edge = frozen(i32(0, 1)), frozen(np.zeros(2, dtype=np.uint8))
    end, offsets, parent = frozen(i32(2, 2)), frozen(i32(0, 0, 1)), frozen(i32(-1, 0))
    steps = np.full((1, 256), UNKNOWN, dtype=np.int32)
    steps[0, 0] = 0
    absorbing = np.zeros(1, dtype=np.bool_)
    node_set, runs, skips = i32(0, 0), i32(0, 0, 0, 0), i32(0, 0, 0)
    _, n_runs, n_skips, _ = walk_subtrees(
        i32(1), i32(0), depth, edge, end, parent, flags(True, True), flags(True, True), steps,
        absorbing, i32(0, 0), np.zeros(2, dtype=np.bool_), node_set, runs, 0, skips, 0,
        i32(0), i32(0), np.zeros(1, dtype=np.bool_), i32(0),
    )  # fmt: skip
    tokens, local = i32(0), i32(0)
    gather_tokens(
        runs[:n_runs], skips[:n_skips], offsets, frozen(i32(0)), frozen(i32(1)), node_set, 1,
        tokens, local,
    )  # fmt: skip
    _, _, _, ids = pack_groups(
        tokens, local, skips[:n_skips], offsets, frozen(i32(0)), i32(0, 1), i32(0), 1, 1, 0,
        frozen(np.zeros(1, dtype=np.uint32)), 0,
    )  # fmt: skip
    row = np.zeros(1, dtype=np.uint32)
    set_bits(row, ids)
    set_bits(row, frozen(i32(0, 1))[1:])  # (a tree's ids: a read-only slice)
    plain_nodes(parent, edge, frozen(np.zeros((1, 256), dtype=np.int32)), flags(True), 0)
