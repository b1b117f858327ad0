"""Vocabulary-aligned subterminal trees (DOMINO §3.2), one per scanner position.

From a scanner position, every token's bytes are read by the scanner in
every way they can be: continuing the current terminal, completing it and
starting others, completing those... Each way is a sequence of *completed*
terminals (the path) followed by the terminal the token ends inside. The
paths of all tokens form a prefix tree; a token hangs at the node of each of
its paths, in a *group* keyed by the terminal it ends inside:

* ``free`` tokens need no parser check beyond their path: they end inside
  the position's own terminal without completing it, or inside an
  ``%ignore``d terminal;
* ``checked`` tokens end inside a terminal that just started, so the parser
  must be able to shift that terminal after the path.

The trees know nothing of the parser: they are computed once per position
and vocabulary, by one walk over the vocabulary's byte trie with the
scanner's sets of (tree node, terminal, state) as the walk's state (sets are
interned and their steps memoized, so the walk's cost is the trie's live
part, not the tokens' segmentations). The walk goes one trie depth at a
time with numpy: a level's nodes look up their sets in the memo table at
once, and only (set, byte) pairs never met before run Python. At decoding
time the parser prunes the trees (``DominoCompiled``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from constrain_api import Vocabulary, bitmask_words, pack_row

from .scanner import BOUNDARY, ScannerGrammar


@dataclass
class SubterminalTree:
    """``children[node]``: completed terminal → child node (node 0: the root,
    nothing completed); ``label[node]``: the terminal on its incoming edge;
    ``free[node]``: packed mask of its free tokens or ``None``;
    ``checked[node]``: ``(terminal, packed mask)`` pairs."""

    children: list[dict[int, int]] = field(default_factory=lambda: [{}])
    label: list[int] = field(default_factory=lambda: [-1])  # the terminal completed into a node
    free: list[np.ndarray | None] = field(default_factory=list)
    checked: list[list[tuple[int, np.ndarray]]] = field(default_factory=list)
    seconds: float = 0.0
    walk_states: int = 0

    def child(self, node: int, terminal: int) -> int:
        nxt = self.children[node].get(terminal)
        if nxt is None:
            nxt = len(self.children)
            self.children.append({})
            self.label.append(terminal)
            self.children[node][terminal] = nxt
        return nxt

    @property
    def num_nodes(self) -> int:
        return len(self.children)

    @property
    def nbytes(self) -> int:
        """Bytes held by the packed masks."""
        free = sum(m.nbytes for m in self.free if m is not None)
        return free + sum(m.nbytes for groups in self.checked for _, m in groups)


class TrieLevels:
    """The vocabulary's token trie by depth, for the level-by-level walk:
    ``levels[d]`` holds the nodes at depth ``d + 1`` as arrays ``(nodes,
    parents, bytes)``; ``token_nodes``/``token_ids`` map tokens to nodes."""

    def __init__(self, vocab: Vocabulary):
        trie = vocab.trie()
        self.size = vocab.size
        self.num_nodes = int(trie.num_nodes)
        parent = trie.parent.astype(np.int64)
        depth = np.zeros(self.num_nodes, dtype=np.int64)
        order = parent.tolist()
        depth_list = depth.tolist()
        for n in range(1, self.num_nodes):  # preorder: a parent comes before its children
            depth_list[n] = depth_list[order[n]] + 1
        depth = np.asarray(depth_list, dtype=np.int64)
        by_depth = np.argsort(depth, kind="stable")
        bounds = np.searchsorted(depth[by_depth], np.arange(1, int(depth.max()) + 2))
        edge = trie.edge_byte.astype(np.int64)
        self.levels = []
        for lo, hi in itertools.pairwise(bounds):
            nodes = by_depth[lo:hi]
            self.levels.append((nodes, parent[nodes], edge[nodes]))
        offsets = trie.token_offsets
        self.token_nodes = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        self.token_ids = trie.token_ids


_UNKNOWN = -2


def build_tree(
    grammar: ScannerGrammar, position: tuple[int, int], trie: TrieLevels
) -> SubterminalTree:
    """The subterminal tree of ``position`` over the vocabulary of ``trie``."""
    tree = SubterminalTree()
    rows, accept, first, ignore = grammar.rows, grammar.accept, grammar.first, grammar.ignore
    t0, q0 = position
    # walk elements: (tree node, terminal, dfa state, still the position's own terminal)
    start = frozenset() if position == BOUNDARY else frozenset({(0, t0, q0, True)})
    sets: list[frozenset] = [start]
    ids: dict[frozenset, int] = {start: 0}

    follows, label = grammar.follows, tree.label

    def starts(node: int, after: frozenset[int] | None, byte: int):
        """Elements for the terminals ``byte`` starts, if they may follow ``after``."""
        return (
            (node, u, qu, False)
            for u, qu in first[byte]
            if after is None or u in after or u in ignore
        )

    def step(sid: int, byte: int) -> int:
        out = set()
        for node, t, q, own in sets[sid]:
            q2 = rows[t][q][byte]
            if q2 >= 0:
                out.add((node, t, q2, own))
            if accept[t][q]:
                if t in ignore:  # the last completed terminal is the node's label
                    out.update(starts(node, follows[label[node]] if node else None, byte))
                else:
                    child = tree.child(node, t)
                    out.update(starts(child, follows[t], byte))
        if position == BOUNDARY and sid == 0:
            out.update(starts(0, grammar.initial, byte))
        if not out:
            return -1
        key = frozenset(out)
        nxt = ids.get(key)
        if nxt is None:
            nxt = ids[key] = len(sets)
            sets.append(key)
        return nxt

    # The walk's set at every trie node, one depth at a time: a node's set is
    # step(its parent's set, its byte), a pure function of the pair, so each
    # level is one table lookup for all its nodes; only pairs not met before
    # run ``step`` (in Python). Dead nodes (-1) have dead subtrees.
    steps = np.full((64, 256), _UNKNOWN, dtype=np.int64)
    node_set = np.full(trie.num_nodes, -1, dtype=np.int64)
    node_set[0] = 0
    for nodes, parents, edges in trie.levels:
        here = node_set[parents]
        live = here >= 0
        if not live.any():
            break  # deeper nodes all descend from dead ones
        nodes, here, edges = nodes[live], here[live], edges[live]
        nxt = steps[here, edges]
        unknown = nxt == _UNKNOWN
        if unknown.any():
            for pair in np.unique(here[unknown] * 256 + edges[unknown]).tolist():
                sid, byte = divmod(pair, 256)
                steps[sid, byte] = step(sid, byte)
                if len(sets) > steps.shape[0]:
                    grown = np.full((2 * len(sets), 256), _UNKNOWN, dtype=np.int64)
                    grown[: steps.shape[0]] = steps
                    steps = grown
            nxt = steps[here, edges]
        node_set[nodes] = nxt

    # tokens by walk set, then groups by (tree node, terminal, free?)
    token_sets = node_set[trie.token_nodes]
    live = token_sets >= 0  # (only the trie's root, which holds no token, has the start set)
    tokens, token_sets = trie.token_ids[live], token_sets[live]
    order = np.argsort(token_sets, kind="stable")
    tokens, token_sets = tokens[order], token_sets[order]
    bounds = np.flatnonzero(np.diff(token_sets)) + 1
    groups: dict[tuple[int, int, bool], list[np.ndarray]] = {}
    for chunk_tokens, sid in zip(
        np.split(tokens, bounds),
        token_sets[np.r_[0, bounds]].tolist() if tokens.size else [],
        strict=False,
    ):
        for node, t, _q, own in sets[sid]:
            groups.setdefault((node, t, own or t in ignore), []).append(chunk_tokens)
    nodes = tree.num_nodes
    tree.free = [None] * nodes
    tree.checked = [[] for _ in range(nodes)]
    free_ids: dict[int, list[np.ndarray]] = {}
    for (node, t, is_free), parts in groups.items():
        if is_free:
            free_ids.setdefault(node, []).extend(parts)
        else:
            tree.checked[node].append((t, _packed(parts, trie.size)))
    for node, parts in free_ids.items():
        tree.free[node] = _packed(parts, trie.size)
    tree.walk_states = len(sets)
    return tree


def _packed(parts: list[np.ndarray], size: int) -> np.ndarray:
    """The packed row of the token ids in ``parts`` (read-only)."""
    allowed = np.zeros(bitmask_words(size) * 32, dtype=bool)  # padded: packed without a copy
    for part in parts:
        allowed[part] = True
    words = pack_row(allowed)
    words.flags.writeable = False
    return words
