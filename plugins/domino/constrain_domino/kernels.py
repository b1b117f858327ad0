"""The subterminal trees' inner loops, compiled by numba (nopython, no GIL).

A tree is a walk over the vocabulary's byte trie (nodes in depth-first
preorder, so a node's subtree is the range ``n .. subtree_end[n] - 1``),
where every trie node gets the walk set of its parent stepped by its byte:
a lookup in the ``steps`` memo table. These loops do the lookups, skip the
subtrees of dead nodes, hand the pairs the table does not know yet back to
Python (which computes them and resumes the walk there), gather the tokens
of the live nodes and pack them into bitmask rows. Python would pay an
interpreter step per trie node (274k on Llama-3); numpy a dozen calls per
trie level whatever its live width. numba compiles them once per process
(:func:`warm_up`, called with the vocabulary's set-up).
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
    steps: np.ndarray,
    path: np.ndarray,
    node_set: np.ndarray,
    runs: np.ndarray,
    n_runs: int,
    pending: np.ndarray,
    pending_sets: np.ndarray,
) -> tuple[int, int]:
    """Walk the subtree of each node ``los[i]``, whose parent is in set ``lo_sets[i]``.

    Sets ``node_set[n]`` of the nodes reached; appends the ranges of
    consecutive live nodes to ``runs`` (as ``lo, hi`` pairs, from entry
    ``n_runs``; disjoint and not empty, so at most one per node), and the
    nodes whose (parent set, byte) pair ``steps`` does not know to
    ``pending``, their parent sets to ``pending_sets`` (their subtrees are
    left for a later call). Returns ``(n_pending, n_runs)``.
    The sets of the path being walked are kept by depth in ``path`` (one
    more entry than the trie's depth): in preorder, a node's parent is the
    last node met one level up.
    """
    n_pending = 0
    for i in range(los.size):
        m = los[i]
        hi = subtree_end[m]
        path[depth[m] - 1] = lo_sets[i]
        run = m
        while m < hi:
            d = depth[m]
            ps = path[d - 1]
            s = steps[ps, edge[m]]
            path[d] = s
            node_set[m] = s
            if s >= 0:
                m += 1
            else:  # the subtree is dead, or waits for the pair's step
                if s == UNKNOWN:
                    pending[n_pending] = m
                    pending_sets[n_pending] = ps
                    n_pending += 1
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
    return n_pending, n_runs


@numba.njit(nogil=True, cache=False)
def gather_tokens(
    runs: np.ndarray,
    token_offsets: np.ndarray,
    token_ids: np.ndarray,
    token_node: np.ndarray,
    node_set: np.ndarray,
    num_sets: int,
    tokens: np.ndarray,
    local: np.ndarray,
) -> tuple[int, np.ndarray]:
    """Write the tokens of the nodes in ``runs`` to ``tokens`` and, to
    ``local``, each one's index among the distinct sets they end in;
    returns their count and those sets (each below ``num_sets``), in order
    of first appearance. A run's tokens are consecutive in the trie's
    ``token_ids`` (preorder)."""
    remap = np.full(num_sets, -1, dtype=np.int32)
    found = np.empty(num_sets, dtype=np.int32)
    num_found = 0
    k = 0
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
    return k, found[:num_found]


@numba.njit(nogil=True, cache=False)
def pack_groups(
    tokens: np.ndarray,
    token_set: np.ndarray,
    group_ptr: np.ndarray,
    group_ids: np.ndarray,
    num_groups: int,
    words: int,
) -> np.ndarray:
    """Packed rows, one per group: token ``tokens[i]`` (in local set
    ``token_set[i]``) belongs to groups ``group_ids[group_ptr[s]:group_ptr[s + 1]]``."""
    out = np.zeros((num_groups, words), dtype=np.uint32)
    for i in range(tokens.size):
        t = tokens[i]
        s = token_set[i]
        bit = np.uint32(1) << np.uint32(t & 31)
        for g in range(group_ptr[s], group_ptr[s + 1]):
            out[group_ids[g], t >> 5] |= bit
    return out


def warm_up() -> None:
    """Compile the kernels for the dtypes and flags the trees use (once per process)."""

    def frozen(a: np.ndarray) -> np.ndarray:
        a.flags.writeable = False
        return a

    def i32(*values: int) -> np.ndarray:
        return np.array(values, dtype=np.int32)

    depth, edge = frozen(i32(0, 1)), frozen(np.zeros(2, dtype=np.uint8))
    end, offsets = frozen(i32(2, 2)), frozen(i32(0, 0, 1))
    steps = np.full((1, 256), UNKNOWN, dtype=np.int32)
    steps[0, 0] = 0
    node_set, runs = i32(0, 0), i32(0, 0, 0, 0)
    _, n_runs = walk_subtrees(
        i32(1), i32(0), depth, edge, end, steps, i32(0, 0), node_set, runs, 0, i32(0), i32(0)
    )
    tokens, local = i32(0), i32(0)
    gather_tokens(
        runs[:n_runs], offsets, frozen(i32(0)), frozen(i32(1)), node_set, 1, tokens, local
    )
    pack_groups(tokens, local, i32(0, 1), i32(0), 1, 1)
