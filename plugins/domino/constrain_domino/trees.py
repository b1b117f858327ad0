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
part, not the tokens' segmentations). At decoding time the parser prunes
them (``DominoCompiled``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from constrain_api import TokenMask, Vocabulary

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


class TrieLists:
    """The vocabulary trie's arrays as Python lists, for the per-node walk."""

    def __init__(self, vocab: Vocabulary):
        trie = vocab.trie()
        self.size = vocab.size
        self.edge = trie.edge_byte.tolist()
        self.parent = trie.parent.tolist()
        self.end = trie.subtree_end.tolist()
        self.num_nodes = len(self.edge)
        offsets = trie.token_offsets
        self.token_nodes = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        self.token_ids = trie.token_ids


def build_tree(
    grammar: ScannerGrammar, position: tuple[int, int], trie: TrieLists
) -> SubterminalTree:
    """The subterminal tree of ``position`` over the vocabulary of ``trie``."""
    tree = SubterminalTree()
    rows, accept, first, ignore = grammar.rows, grammar.accept, grammar.first, grammar.ignore
    t0, q0 = position
    # walk elements: (tree node, terminal, dfa state, still the position's own terminal)
    start = frozenset() if position == BOUNDARY else frozenset({(0, t0, q0, True)})
    sets: list[frozenset] = [start]
    ids: dict[frozenset, int] = {start: 0}
    steps: list[dict[int, int]] = [{}]

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
            steps.append({})
        return nxt

    edge, parent, end = trie.edge, trie.parent, trie.end
    node_set = [-1] * trie.num_nodes
    node_set[0] = 0
    n = 1
    while n < trie.num_nodes:
        sid = node_set[parent[n]]
        memo = steps[sid]
        byte = edge[n]
        nxt = memo.get(byte)
        if nxt is None:
            nxt = memo[byte] = step(sid, byte)
        if nxt < 0:
            n = end[n]  # no token below continues: skip the subtree
            continue
        node_set[n] = nxt
        n += 1

    # tokens by walk set, then groups by (tree node, terminal, free?)
    token_sets = np.asarray(node_set, dtype=np.int64)[trie.token_nodes]
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
    words = TokenMask.from_ids(np.unique(np.concatenate(parts)), size).words
    words.flags.writeable = False
    return words
