"""A byte trie (prefix tree) over token bytes, stored in flat numpy arrays.

Nodes are numbered in depth-first preorder with children ordered by byte
value, so the subtree of node ``n`` is the contiguous range
``n .. subtree_end[n] - 1``. A walker that finds node ``n`` dead skips its
whole subtree by jumping to ``subtree_end[n]``. Node 0 is the root (the empty
prefix). Because preorder with byte-ordered children is the lexicographic
order of the prefixes, the trie is built from the tokens sorted by bytes, each
token adding the nodes past its longest common prefix with the previous one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

__all__ = ["TokenTrie"]


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


_LCP_WINDOW = 16


def _lcp_with_previous(tokens: list[bytes], lens: np.ndarray) -> np.ndarray:
    """Longest common prefix of each token with the one before it (0 for the first)."""
    n = len(tokens)
    lcp = np.zeros(n, dtype=np.int64)
    if n < 2:
        return lcp
    w = _LCP_WINDOW
    heads = np.frombuffer(b"".join([t[:w].ljust(w, b"\0") for t in tokens]), dtype=np.uint8)
    heads = heads.reshape(n, w)
    eq = heads[1:] == heads[:-1]
    first_diff = np.where(eq.all(axis=1), w, np.argmin(eq, axis=1))
    lcp[1:] = np.minimum(first_diff, np.minimum(lens[1:], lens[:-1]))
    # pairs that agree on the whole window and are longer: finish in Python
    for k in (np.flatnonzero(lcp[1:] == w) + 1).tolist():
        a, b = tokens[k - 1], tokens[k]
        m, i = min(len(a), len(b)), w
        while i < m and a[i] == b[i]:
            i += 1
        lcp[k] = i
    return lcp


class TokenTrie:
    """Immutable byte trie over ``(token id, bytes)`` pairs, in flat arrays.

    Arrays (all read-only):

    * ``edge_byte``: ``uint8[num_nodes]``, label of the edge into each node (0 for the root);
    * ``depth``: ``int32[num_nodes]``, length of the node's prefix;
    * ``parent``: ``int32[num_nodes]``, parent node (-1 for the root);
    * ``subtree_end``: ``int32[num_nodes]``, one past the last node of the node's subtree;
    * ``token_offsets``: ``int32[num_nodes + 1]`` and ``token_ids``: ``int32[num_tokens]``;
      the ids whose bytes equal node ``n``'s prefix are
      ``token_ids[token_offsets[n]:token_offsets[n + 1]]``, ascending.

    Build it with :meth:`TokenTrie.build`.
    """

    __slots__ = (
        "_edge_list",
        "_end_list",
        "depth",
        "edge_byte",
        "parent",
        "subtree_end",
        "token_ids",
        "token_offsets",
    )

    def __init__(
        self,
        edge_byte: np.ndarray,
        depth: np.ndarray,
        parent: np.ndarray,
        subtree_end: np.ndarray,
        token_offsets: np.ndarray,
        token_ids: np.ndarray,
    ):
        """Wrap prebuilt arrays (see the class docstring); prefer :meth:`build`."""
        n = len(edge_byte)
        if n < 1:
            raise ValueError("a trie has at least the root node")
        for arr_name, arr in (("depth", depth), ("parent", parent), ("subtree_end", subtree_end)):
            if len(arr) != n:
                raise ValueError(f"{arr_name} has {len(arr)} entries, expected {n}")
        if len(token_offsets) != n + 1:
            raise ValueError(f"token_offsets has {len(token_offsets)} entries, expected {n + 1}")
        if int(token_offsets[-1]) != len(token_ids):
            raise ValueError("token_offsets[-1] must equal len(token_ids)")
        self.edge_byte = _frozen(np.asarray(edge_byte, dtype=np.uint8))
        self.depth = _frozen(np.asarray(depth, dtype=np.int32))
        self.parent = _frozen(np.asarray(parent, dtype=np.int32))
        self.subtree_end = _frozen(np.asarray(subtree_end, dtype=np.int32))
        self.token_offsets = _frozen(np.asarray(token_offsets, dtype=np.int32))
        self.token_ids = _frozen(np.asarray(token_ids, dtype=np.int32))
        self._edge_list: list[int] | None = None
        self._end_list: list[int] | None = None

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, pairs: Mapping[int, bytes] | Iterable[tuple[int, bytes]]) -> TokenTrie:
        """Build the trie from a mapping ``id -> bytes`` or an iterable of ``(id, bytes)``.

        Several ids may share the same bytes; an empty byte string sits at the root.
        Runs in O(total bytes) after sorting the tokens by their bytes.
        """
        items = pairs.items() if isinstance(pairs, Mapping) else pairs
        ids: list[int] = []
        raw: list[bytes] = []
        for i, b in items:
            ids.append(int(i))
            raw.append(bytes(b))
        # sort by (bytes, id): stable sort by id, then stable sort by bytes
        order = sorted(range(len(ids)), key=ids.__getitem__)
        order.sort(key=raw.__getitem__)
        sorted_bytes = [raw[j] for j in order]
        token_ids = np.fromiter((ids[j] for j in order), dtype=np.int32, count=len(order))

        # distinct byte strings, in lexicographic (= preorder) order
        is_new = [True] * len(sorted_bytes)
        for k in range(1, len(sorted_bytes)):
            is_new[k] = sorted_bytes[k] != sorted_bytes[k - 1]
        uniq = [b for b, f in zip(sorted_bytes, is_new, strict=True) if f]
        n_uniq = len(uniq)
        lens = np.fromiter((len(b) for b in uniq), dtype=np.int64, count=n_uniq)
        lcp = _lcp_with_previous(uniq, lens)

        new = lens - lcp  # nodes each distinct token adds past its common prefix
        num_nodes = 1 + int(new.sum())
        starts = 1 + np.concatenate(([0], np.cumsum(new)[:-1])) if n_uniq else new
        edge_byte = np.zeros(num_nodes, dtype=np.uint8)
        depth = np.zeros(num_nodes, dtype=np.int32)
        parent = np.full(num_nodes, -1, dtype=np.int32)
        subtree_end = np.full(num_nodes, num_nodes, dtype=np.int32)
        if num_nodes > 1:
            lcp_list = lcp.tolist()
            edge_byte[1:] = np.frombuffer(
                b"".join([b[m:] for b, m in zip(uniq, lcp_list, strict=True)]), dtype=np.uint8
            )
            # node j of token k's new nodes sits at depth lcp_k + 1 + (j - start_k)
            depth[1:] = np.arange(1, num_nodes) + np.repeat(lcp + 1 - starts, new)
            # group nodes by depth (ascending ids within a level)
            by_depth = np.argsort(depth, kind="stable")
            bounds = np.concatenate(([0], np.cumsum(np.bincount(depth))))
            max_d = len(bounds) - 2
            # the parent of v is the last node before v one level up (preorder)
            for d in range(1, max_d + 1):
                up = by_depth[bounds[d - 1] : bounds[d]]
                cur = by_depth[bounds[d] : bounds[d + 1]]
                parent[cur] = up[np.searchsorted(up, cur) - 1]
            # subtree sizes, accumulated bottom-up one level at a time
            size = np.ones(num_nodes, dtype=np.int64)
            for d in range(max_d, 0, -1):
                cur = by_depth[bounds[d] : bounds[d + 1]]
                np.add.at(size, parent[cur], size[cur])
            subtree_end = (np.arange(num_nodes) + size).astype(np.int32)

        # the node of each distinct token is the last node it added (the root for b"")
        uniq_node = np.where(new > 0, starts + new - 1, 0)
        token_node = uniq_node[np.cumsum(np.asarray(is_new, dtype=np.int64)) - 1]
        per_node = np.bincount(token_node, minlength=num_nodes)
        token_offsets = np.zeros(num_nodes + 1, dtype=np.int32)
        np.cumsum(per_node, out=token_offsets[1:])
        return cls(edge_byte, depth, parent, subtree_end, token_offsets, token_ids)

    # ------------------------------------------------------------ properties
    @property
    def num_nodes(self) -> int:
        """Number of nodes, the root included."""
        return len(self.edge_byte)

    @property
    def num_tokens(self) -> int:
        """Number of token ids stored (duplicates of the same bytes counted)."""
        return len(self.token_ids)

    @property
    def max_depth(self) -> int:
        """Length of the longest token in bytes."""
        return int(self.depth.max())

    def __len__(self) -> int:
        """Number of nodes, the root included."""
        return self.num_nodes

    def __repr__(self) -> str:
        return f"TokenTrie(num_nodes={self.num_nodes}, num_tokens={self.num_tokens})"

    # ---------------------------------------------------------------- queries
    def _lists(self) -> tuple[list[int], list[int]]:
        if self._edge_list is None or self._end_list is None:
            self._end_list = self.subtree_end.tolist()
            self._edge_list = self.edge_byte.tolist()
        return self._edge_list, self._end_list

    def _check(self, node: int) -> int:
        node = int(node)
        if not 0 <= node < self.num_nodes:
            raise IndexError(f"node {node} out of range (trie has {self.num_nodes} nodes)")
        return node

    def child(self, node: int, byte: int) -> int | None:
        """The child of ``node`` along edge ``byte``, or None."""
        node = self._check(node)
        edges, ends = self._lists()
        c, end = node + 1, ends[node]
        while c < end:
            e = edges[c]
            if e == byte:
                return c
            if e > byte:
                return None
            c = ends[c]
        return None

    def children(self, node: int) -> list[int]:
        """The children of ``node``, in increasing byte order."""
        node = self._check(node)
        _, ends = self._lists()
        out = []
        c, end = node + 1, ends[node]
        while c < end:
            out.append(c)
            c = ends[c]
        return out

    def find(self, prefix: bytes) -> int | None:
        """The node whose prefix is exactly ``prefix``, or None when no token starts with it."""
        node: int | None = 0
        for b in bytes(prefix):
            node = self.child(node, b)
            if node is None:
                return None
        return node

    def prefix(self, node: int) -> bytes:
        """The bytes on the path from the root to ``node``."""
        node = self._check(node)
        out = bytearray()
        parent = self.parent
        edges = self.edge_byte
        while node > 0:
            out.append(int(edges[node]))
            node = int(parent[node])
        out.reverse()
        return bytes(out)

    def tokens_at(self, node: int) -> np.ndarray:
        """Ids (ascending, int32, read-only) of the tokens whose bytes equal ``node``'s prefix."""
        node = self._check(node)
        off = self.token_offsets
        return self.token_ids[off[node] : off[node + 1]]

    def tokens_under(self, node: int) -> np.ndarray:
        """Ids (int32, read-only) of every token in ``node``'s subtree, in node preorder.

        These are the tokens whose bytes start with ``node``'s prefix.
        """
        node = self._check(node)
        off = self.token_offsets
        return self.token_ids[off[node] : off[self.subtree_end[node]]]
