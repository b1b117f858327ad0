"""How large an outlines-core index would be, before it is built.

outlines-core builds its index in one uninterruptible call, holding one
entry per (state, allowed token): about 18 bytes each and 0.6 µs each on a
2-core x86_64 VM (measured on Llama-3: ``[^"]{0,80}``, 881 states, 19 M
entries, 326 MB, 11 s). ``[^"]{0,5000}`` would hold about a billion entries:
the process ran out of 8 GB after 88 s. :class:`IndexSize` counts the
tokens each state of the core's DFA allows (every state when there are few,
a fixed random sample of them otherwise) with one vectorized walk of the
vocabulary's trie per depth, so a compilation past the memory bound is
refused in a fraction of a second instead. The walk runs only when the
trivial bound (every token whose first byte a state allows, in every
state: ``most_megabytes``) passes the
limit: most constraints never pay for it. Each walk is a budget checkpoint.
"""

from __future__ import annotations

import itertools

import numpy as np

from constrain_api import ByteDFA, Vocabulary, checkpoint

#: Measured bytes per index entry (state, token) in outlines-core.
BYTES_PER_ENTRY = 18
#: States walked per estimate (all of them when the DFA has fewer).
SAMPLE = 32


class IndexSize:
    """Estimates of index sizes over one vocabulary (its trie, by depth)."""

    def __init__(self, vocab: Vocabulary):
        trie = vocab.trie()
        depth = np.asarray(trie.depth, dtype=np.int64)
        order = np.argsort(depth, kind="stable")
        bounds = np.searchsorted(depth[order], np.arange(1, int(depth.max()) + 2))
        parent = np.asarray(trie.parent, dtype=np.int64)
        edge = np.asarray(trie.edge_byte, dtype=np.int64)
        self.levels = []
        for lo, hi in itertools.pairwise(bounds):
            nodes = order[lo:hi]
            self.levels.append((nodes, parent[nodes], edge[nodes]))
        self.tokens_at = np.diff(np.asarray(trie.token_offsets, dtype=np.int64))
        self.num_nodes = int(trie.num_nodes)

    def entries(self, dfa: ByteDFA) -> int:
        """About how many (state, token) pairs an index of ``dfa`` holds."""
        n = dfa.num_states
        if n == 0:
            return 0
        if n <= SAMPLE:
            states = np.arange(n)
        else:
            states = np.sort(np.random.default_rng(0).choice(n, SAMPLE, replace=False))
        at = np.full((states.size, self.num_nodes), -1, dtype=np.int64)
        at[:, 0] = states
        table = np.asarray(dfa.table, dtype=np.int64)
        for nodes, parents, edges in self.levels:
            before = at[:, parents]
            at[:, nodes] = np.where(before >= 0, table[np.maximum(before, 0), edges], -1)
        allowed = ((at >= 0) * self.tokens_at).sum(axis=1)
        return round(float(allowed.mean()) * n)

    def megabytes(self, dfas: list[ByteDFA]) -> float:
        """Estimated memory of the indices of ``dfas``, in MiB."""
        total = 0
        for d in dfas:
            checkpoint()
            total += self.entries(d)
        return total * BYTES_PER_ENTRY / 2**20


def first_byte_counts(vocab: Vocabulary) -> np.ndarray:
    """How many tokens start with each byte (256 counts)."""
    trie = vocab.trie()
    depth = np.asarray(trie.depth)
    first = np.flatnonzero(depth == 1)
    offsets = np.asarray(trie.token_offsets, dtype=np.int64)
    ends = np.asarray(trie.subtree_end, dtype=np.int64)[first]
    counts = np.zeros(256, dtype=np.int64)
    counts[np.asarray(trie.edge_byte)[first]] = offsets[ends] - offsets[first]
    return counts


def most_megabytes(dfas: list[ByteDFA], first_bytes: np.ndarray) -> float:
    """A bound on the indices' memory with no walk: in each state, every
    token whose first byte the state allows (``first_bytes``:
    :func:`first_byte_counts`)."""
    entries = sum(int(((np.asarray(d.table) >= 0) @ first_bytes).sum()) for d in dfas)
    return entries * BYTES_PER_ENTRY / 2**20
