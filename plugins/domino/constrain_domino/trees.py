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
and vocabulary, by a walk over the vocabulary's byte trie with the
scanner's sets of (path, terminal, state) as the walk's state. The sets are
interned and their steps memoized in a table that every position's tree of
one grammar shares (``TreeBuilder``): positions reach the same sets (every
position inside a string terminal meets the same ones once the string
closes), so a tree mostly looks up steps other trees computed. The walk
itself runs compiled (``kernels``): a table lookup per live trie node, dead
subtrees skipped, and only (set, byte) pairs never met before run Python.
At decoding time the parser prunes the trees (``DominoCompiled``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from constrain_api import ByteDFA, Vocabulary, bitmask_words, byte_segments, pack_row

from . import kernels
from .scanner import BOUNDARY, ScannerGrammar


@dataclass(slots=True)
class SubterminalTree:
    """``children[node]``: completed terminal → child node while it is built
    (a dict), its ``(terminal, child)`` pairs once built (node 0: the root,
    nothing completed); ``label[node]``: the terminal on its incoming edge;
    ``free[node]``: its free tokens or ``None``; ``checked[node]``:
    ``(terminal, tokens)`` pairs; all four tuples once built
    (:meth:`freeze`). Only nodes with tokens at or below them are kept. A
    group's *tokens* are a packed bitmask row (``words`` long,
    int32) or, for a group of a few tokens (most groups), their ids (int32,
    shorter than a row): :meth:`token_ids` reads either."""

    children: Sequence[dict[int, int] | tuple[tuple[int, int], ...]] = field(
        default_factory=lambda: [{}]
    )
    label: Sequence[int] = field(default_factory=lambda: [-1])  # the terminal completed into a node
    free: Sequence[np.ndarray | None] = field(default_factory=list)
    checked: Sequence[Sequence[tuple[int, np.ndarray]]] = field(default_factory=list)
    words: int = 0  # the length of a packed row
    seconds: float = 0.0
    walk_states: int = 0  # the walk sets its tokens end in
    sliced: int = 0  # tokens taken from the slices (subtrees of plain tokens not walked)

    @property
    def num_nodes(self) -> int:
        return len(self.children)

    def freeze(self) -> None:
        """Turn the built tree's lists (and each node's dict of children)
        into tuples: tuples of numbers and arrays leave the garbage
        collector's view (lists never do, nor a tuple that holds a dict),
        and a decoding keeps thousands of trees, which every full collection
        would otherwise walk, a dict per node (a large schema's 4,375
        trees: 31 of a collection's 50 ms)."""
        self.children = tuple(tuple(kids.items()) for kids in self.children)
        self.label = tuple(self.label)
        self.free = tuple(self.free)
        self.checked = tuple(tuple(groups) for groups in self.checked)

    def token_ids(self, tokens: np.ndarray) -> np.ndarray:
        """The ids (sorted) in a group's ``tokens``, packed or not."""
        if tokens.size != self.words:
            return np.sort(tokens)
        return np.flatnonzero(np.unpackbits(tokens.view(np.uint8), bitorder="little"))

    @property
    def nbytes(self) -> int:
        """Bytes held by the groups' tokens."""
        free = sum(m.nbytes for m in self.free if m is not None)
        return free + sum(m.nbytes for groups in self.checked for _, m in groups)


class VocabTrie:
    """The vocabulary's byte trie as the compiled walk reads it (arrays in
    preorder: ``depth``, ``edge``, ``subtree_end``, ``token_offsets``,
    ``token_ids`` and ``token_node``, the node of each ``token_ids`` entry),
    with per-thread walk buffers; building one compiles the kernels (once
    per process), so it belongs to the vocabulary's set-up."""

    def __init__(self, vocab: Vocabulary):
        trie = vocab.trie()
        self.size = vocab.size
        self.words = bitmask_words(vocab.size)
        self.num_nodes = int(trie.num_nodes)
        self.depth = np.ascontiguousarray(trie.depth, dtype=np.int32)
        self.max_token_bytes = int(self.depth.max())  # the longest token's bytes
        self.edge = np.ascontiguousarray(trie.edge_byte, dtype=np.uint8)
        self.subtree_end = np.ascontiguousarray(trie.subtree_end, dtype=np.int32)
        self.token_offsets = np.ascontiguousarray(trie.token_offsets, dtype=np.int32)
        self.token_ids = np.ascontiguousarray(trie.token_ids, dtype=np.int32)
        self.token_node = np.repeat(  # the node of each entry of token_ids
            np.arange(self.num_nodes, dtype=np.int32), np.diff(self.token_offsets)
        )
        self.root_children = np.flatnonzero(trie.parent == 0).astype(np.int32)
        self.parent = np.ascontiguousarray(trie.parent, dtype=np.int32)
        # the slices: nodes whose bytes are plain string characters, and
        # nodes with a token that is not plain in their subtree
        self.plain_dfa = ByteDFA.from_regex(PLAIN_CHARACTERS)
        self.plain = kernels.plain_nodes(
            self.parent, self.edge, self.plain_dfa.table, self.plain_dfa.accepting,
            self.plain_dfa.start,
        )  # fmt: skip
        impure = np.where(self.plain, 0, np.diff(self.token_offsets))
        below = np.concatenate(([0], np.cumsum(impure)))
        self.mixed = below[self.subtree_end] > below[:-1]
        # the plain tokens (not the empty one): from a set that absorbs plain
        # strings, every one of them ends in that set
        plain_token = np.zeros(self.size, dtype=np.bool_)
        plain_token[self.token_ids[self.plain[self.token_node] & (self.token_node != 0)]] = True
        self.plain_tokens = pack_row(plain_token).view(np.uint32)
        for a in (self.token_node, self.parent, self.plain, self.mixed, self.plain_tokens):
            a.flags.writeable = False  # like the trie's own arrays
        self._scratch = threading.local()
        kernels.warm_up()

    def scratch(self) -> tuple[np.ndarray, ...]:
        """This thread's walk buffers ``(path, skippable, node_set, runs,
        skips, pending, pending_sets, tokens, local)``, reused by every walk
        it runs (fresh pages would cost a fault each)."""
        buffers = getattr(self._scratch, "buffers", None)
        if buffers is None:
            nodes, tokens = self.num_nodes, self.token_ids.size
            buffers = self._scratch.buffers = (
                np.empty(self.max_token_bytes + 1, dtype=np.int32),
                np.empty(self.max_token_bytes + 1, dtype=np.bool_),
                np.empty(nodes, dtype=np.int32),
                np.empty(2 * nodes, dtype=np.int32),
                np.empty(3 * nodes, dtype=np.int32),
                np.empty(nodes, dtype=np.int32),
                np.empty(nodes, dtype=np.int32),
                np.empty(tokens, dtype=np.int32),
                np.empty(tokens, dtype=np.int32),
            )
        return buffers


#: The characters of the slices: what a JSON string holds unescaped. A
#: token made of them only is *plain*; a walk set that every plain string
#: leaves as it is (inside a string, most often) has all plain tokens in it.
PLAIN_CHARACTERS = r'[^\x00-\x1f"\\]*'

#: a group of at most this many tokens is kept as their ids, not a packed row
FEW_TOKENS = 64

#: walk sets a builder keeps before it starts over (each holds a 1 KiB row of steps)
MAX_WALK_SETS = 8192

Element = tuple[int, int, int, bool]  # (path node, terminal or -1 at the boundary, state, own)


class TreeBuilder:
    """Builds the trees of one scanner grammar over one vocabulary, sharing
    the walk's memo between positions: the interned walk sets, their steps
    (``steps[set, byte]``: the next set, ``DEAD`` or ``UNKNOWN``) and the
    path nodes (terminal sequences, numbered as met). A build starts the
    memo over when more than three quarters of ``max_sets`` sets are in
    it, so it stays bounded. Not thread-safe: callers serialize
    :meth:`build` (holding ``lock``)."""

    def __init__(
        self,
        grammar: ScannerGrammar,
        trie: VocabTrie,
        max_sets: int = MAX_WALK_SETS,
        slices: bool = True,
    ):
        self.grammar, self.trie, self.max_sets, self.slices = grammar, trie, max_sets, slices
        self.lock = threading.Lock()
        self._starts_memo: dict[frozenset[int] | None, list[tuple[int, int, int, int]]] = {}
        # the steps table: 64 rows, then, once a grammar needs more, room
        # for max_sets at once, never filled as a whole: a row is set when
        # its set is interned, so its pages are touched as sets are met. A
        # build starts over when less than a quarter is free, so it finds
        # room (doubled only for a build that makes more sets than that).
        # (Doubling it, each time filling or copying megabytes into fresh
        # pages, cost a first-visit tree 8-25 ms in page faults at 4,096 and
        # 8,192 rows.) A reset keeps it
        self.steps = np.empty((64, 256), dtype=np.int32)
        self.absorbing = np.zeros(64, dtype=np.bool_)
        # the walk's marks of the sets its pending nodes wait on, one per
        # row (all clear between its rounds), and the list of those sets
        self.waiting = np.zeros(64, dtype=np.bool_)
        self.new_sets = np.empty(64, dtype=np.int32)
        self._reset()

    def _reset(self) -> None:
        self.sets: list[frozenset[Element]] = []
        self._ids: dict[frozenset[Element], int] = {}
        # (steps[sid] and absorbing[sid], decided with the set's steps, are
        # set as each set is interned)
        self._absorbs_memo: dict[tuple[int, int], bool] = {}
        self._children: list[dict[int, int]] = [{}]  # path node -> {terminal: path node}
        self._parent: list[int] = [-1]
        self._label: list[int] = [-1]

    @property
    def nbytes(self) -> int:
        """Bytes of the steps table's rows in use (the memo's bulk)."""
        return len(self.sets) * self.steps.shape[1] * self.steps.itemsize

    def _intern(self, elements: frozenset[Element]) -> int:
        sid = self._ids.get(elements)
        if sid is None:
            sid = self._ids[elements] = len(self.sets)
            self.sets.append(elements)
            if sid >= self.steps.shape[0]:  # (64 rows, then max_sets; doubled past that)
                rows = max(2 * self.steps.shape[0], self.max_sets)
                grown = np.empty((rows, 256), dtype=np.int32)
                grown[:sid] = self.steps[:sid]
                self.steps = grown
                absorbing = np.zeros(rows, dtype=np.bool_)
                absorbing[:sid] = self.absorbing[:sid]
                self.absorbing = absorbing
                self.waiting = np.zeros(rows, dtype=np.bool_)  # (clear: only sets met are marked)
                self.new_sets = np.empty(rows, dtype=np.int32)
            self.steps[sid] = kernels.UNKNOWN
            self.absorbing[sid] = False
        return sid

    def _child(self, node: int, terminal: int) -> int:
        nxt = self._children[node].get(terminal)
        if nxt is None:
            nxt = self._children[node][terminal] = len(self._children)
            self._children.append({})
            self._parent.append(node)
            self._label.append(terminal)
        return nxt

    def _step(self, sid: int, byte: int) -> int:
        """The set after ``byte`` from set ``sid`` (``DEAD`` if empty): the
        definition :meth:`_step_all` computes for every byte at once."""
        g = self.grammar
        rows, accept, first, ignore = g.rows, g.accept, g.first, g.ignore
        out: set[Element] = set()

        def start(node: int, after: frozenset[int] | None) -> None:
            """The terminals ``byte`` starts, if they may follow ``after``."""
            for u, qu in first[byte]:
                if after is None or u in after or u in ignore:
                    out.add((node, u, qu, False))

        for node, t, q, own in self.sets[sid]:
            if t < 0:  # the boundary: the byte starts a terminal
                start(0, g.initial)
                continue
            q2 = rows[t][q][byte]
            if q2 >= 0:
                out.add((node, t, q2, own))
            if accept[t][q]:
                for at, after in self._completions(node, t):
                    start(at, after)
        return self._intern(frozenset(out)) if out else kernels.DEAD

    def _completions(self, node: int, t: int) -> list[tuple[int, frozenset[int] | None]]:
        """Where a path goes when terminal ``t`` completes at path node
        ``node``: ``(path node, the terminals that may come next)``. An
        ignored terminal leaves the path as it is (the node's label, the
        last terminal completed, says what may follow); any other one is a
        child of the node; one that is ignored and used by the rules both."""
        g = self.grammar
        ways = []
        if t in g.ignore:
            ways.append((node, g.follows[self._label[node]] if node else None))
        if t in g.shifted:
            ways.append((self._child(node, t), g.follows[t]))
        return ways

    def _step_all(self, sid: int) -> None:
        """Fill the steps of set ``sid`` for every byte: each element's
        transitions and the terminals it starts as byte ranges, the byte
        line cut where they begin and end, one walk set per piece (a set
        of many terminals, after ``,"`` with an object's keys as
        terminals, costs its elements' ranges, not pieces × elements)."""
        g = self.grammar
        elements = self.sets[sid]
        runs_of, accept = g.runs_of, g.accept
        if len(elements) == 1:  # (most sets: one terminal, inside it, no path choice)
            ((node, t, q, own),) = elements
            if t >= 0 and not accept[t][q]:
                ids = [
                    (lo, hi, self._intern(frozenset(((node, t, q2, own),))))
                    for lo, hi, q2 in runs_of[t](q)
                ]
                row = self.steps[sid]  # after interning: it may grow the table
                row[:] = kernels.DEAD
                for lo, hi, nxt in ids:
                    row[lo : hi + 1] = nxt
                self.absorbing[sid] = self.slices and self._absorbs(t, q)
                return
        items: list[tuple[int, int, Element]] = []
        for node, t, q, own in elements:
            if t >= 0:  # (the boundary, t < 0: the byte starts a terminal)
                items.extend((lo, hi, (node, t, q2, own)) for lo, hi, q2 in runs_of[t](q))
                if not accept[t][q]:
                    continue
            for at, after in self._completions(node, t) if t >= 0 else ((0, g.initial),):
                items.extend((lo, hi, (at, u, qu, False)) for lo, hi, u, qu in self._starts(after))
        targets = [(lo, hi, self._intern(piece)) for lo, hi, piece in byte_segments(items)]
        row = self.steps[sid]  # after interning: it may grow the table
        row[:] = kernels.DEAD
        for lo, hi, nxt in targets:
            row[lo : hi + 1] = nxt

    def _starts(self, after: frozenset[int] | None) -> list[tuple[int, int, int, int]]:
        """The terminals' start ranges ``(lo, hi, terminal, state)`` of the
        terminals that may come after ``after`` (``None``: any), memoized."""
        starts = self._starts_memo.get(after)
        if starts is None:
            ignore = self.grammar.ignore
            starts = self._starts_memo[after] = [
                (lo, hi, u, qu)
                for lo, hi, u, qu in self.grammar.start_runs
                if after is None or u in after or u in ignore
            ]
        return starts

    def _absorbs(self, t: int, q: int) -> bool:
        """Whether every plain string read from state ``q`` of terminal
        ``t`` comes back to ``q`` after each whole character, through
        states that are live and do not accept (so the terminal never ends
        inside it: a set ``{(node, t, q, own)}`` stays itself). The
        product of the automaton with the plain characters' from ``q``."""
        key = (t, q)
        known = self._absorbs_memo.get(key)
        if known is not None:
            return known
        runs_of, accept = self.grammar.runs_of[t], self.grammar.accept[t]
        plain = self.trie.plain_dfa
        whole = plain.accept
        todo = [(plain.start, q)]
        seen = set(todo)
        absorbs = True
        while todo and absorbs:
            p, d = todo.pop()
            if accept[d]:
                absorbs = False
                break
            runs = runs_of(d)  # (in byte order, apart: dead where none covers)
            for lo, hi, p2 in plain.runs_of(p):
                # every byte of lo..hi must go on: through the runs covering it
                byte = lo
                for run_lo, run_hi, d2 in runs:
                    if run_hi < byte:
                        continue
                    if run_lo > byte or (d2 != q if whole[p2] else accept[d2]):
                        break  # (a byte that dies, or a wrong state)
                    if not whole[p2] and (p2, d2) not in seen:
                        seen.add((p2, d2))
                        todo.append((p2, d2))
                    byte = run_hi + 1
                    if byte > hi:
                        break
                if byte <= hi:
                    absorbs = False
                    break
        self._absorbs_memo[key] = absorbs
        return absorbs

    def build(self, position: tuple[int, int]) -> SubterminalTree:
        """The subterminal tree of ``position``."""
        if len(self.sets) > self.max_sets - self.max_sets // 4:
            self._reset()  # (so that the build finds room: see __init__)
        t0, q0 = position
        start = self._intern(
            frozenset({(0, -1, 0, False) if position == BOUNDARY else (0, t0, q0, True)})
        )
        trie = self.trie
        path, skippable, node_set, runs, skips, pending, pending_sets, tokens, local = (
            trie.scratch()
        )
        los, lo_sets = trie.root_children, np.full(trie.root_children.size, start, dtype=np.int32)
        n_runs = n_skips = 0
        while True:  # a compiled walk until it meets sets never stepped, which Python steps
            n_pending, n_runs, n_skips, n_new = kernels.walk_subtrees(
                los, lo_sets, trie.depth, trie.edge, trie.subtree_end, trie.parent, trie.plain,
                trie.mixed, self.steps, self.absorbing, path,
                skippable, node_set, runs, n_runs, skips, n_skips, pending, pending_sets,
                self.waiting, self.new_sets,
            )  # fmt: skip
            if not n_pending:
                break
            if not n_new:  # (a mark left from an earlier round: the walk would never end)
                raise RuntimeError("the tree walk's pending nodes wait on no set it lists")
            los, lo_sets = pending[:n_pending].copy(), pending_sets[:n_pending].copy()
            todo = np.sort(self.new_sets[:n_new])
            self.waiting[todo] = False
            for sid in todo.tolist():
                self._step_all(sid)
        n_tokens, set_ids, sliced = kernels.gather_tokens(
            runs[:n_runs], skips[:n_skips], trie.token_offsets, trie.token_ids, trie.token_node,
            node_set, len(self.sets), tokens, local,
        )  # fmt: skip
        # a start set that absorbs plain strings holds every plain token
        held = np.flatnonzero(set_ids == start) if self.absorbing[start] else ()
        base = int(held[0]) if len(held) else -1
        tree = self._tree(tokens[:n_tokens], local[:n_tokens], skips[:n_skips], set_ids, base)
        tree.sliced = int(sliced)
        return tree

    def _tree(
        self,
        tokens: np.ndarray,
        local: np.ndarray,
        skips: np.ndarray,
        set_ids: np.ndarray,
        base: int = -1,
    ) -> SubterminalTree:
        """Group the live tokens (``local``: each one's index into the walk
        sets ``set_ids``; ``skips``: slices of the trie and theirs) by (path
        node, terminal ended in, free?) and keep the path nodes with tokens
        at or below them. ``base``: the index of a set holding every plain
        token (its slices are not unpacked), or ``-1``."""
        ignore = self.grammar.ignore
        groups: dict[tuple[int, int], int] = {}  # (path node, terminal or -1 if free) -> group
        ptr, members = [0], []
        for sid in set_ids.tolist():
            mine: list[int] = []
            for node, t, _q, own in self.sets[sid]:
                if t >= 0:
                    group = groups.setdefault((node, -1 if own or t in ignore else t), len(groups))
                    if group not in mine:
                        mine.append(group)
            members += mine
            ptr.append(len(members))
        trie = self.trie
        rows, row_of, offsets, ids = kernels.pack_groups(
            tokens,
            local,
            skips,
            trie.token_offsets,
            trie.token_ids,
            np.asarray(ptr, dtype=np.int32),
            np.asarray(members, dtype=np.int32),
            len(groups),
            trie.words,
            base,
            trie.plain_tokens,
            min(FEW_TOKENS, trie.words - 1),  # (ids shorter than a row)
        )
        rows = rows.view(np.int32)
        rows.flags.writeable = ids.flags.writeable = False
        row_of, offsets = row_of.tolist(), offsets.tolist()
        # the path nodes of the groups and their ancestors, renumbered from the root
        local_of = {0: 0}
        tree = SubterminalTree(words=trie.words)
        for node in sorted({node for node, _ in groups}):
            chain = []
            while node not in local_of:
                chain.append(node)
                node = self._parent[node]
            for path_node in reversed(chain):  # parents first
                here, terminal = len(tree.children), self._label[path_node]
                local_of[path_node] = here
                tree.children[local_of[self._parent[path_node]]][terminal] = here
                tree.children.append({})
                tree.label.append(terminal)
        tree.free = [None] * tree.num_nodes
        tree.checked = [[] for _ in range(tree.num_nodes)]
        for (node, t), group in groups.items():
            r = row_of[group]
            members_of = rows[r] if r >= 0 else ids[offsets[group] : offsets[group + 1]]
            if t < 0:
                tree.free[local_of[node]] = members_of
            else:
                tree.checked[local_of[node]].append((t, members_of))
        tree.freeze()
        tree.walk_states = len(set_ids)
        return tree


def build_tree(
    grammar: ScannerGrammar, position: tuple[int, int], trie: VocabTrie
) -> SubterminalTree:
    """The subterminal tree of ``position`` over the vocabulary of ``trie``
    (with a memo of its own: :class:`TreeBuilder` shares one between positions)."""
    return TreeBuilder(grammar, trie).build(position)
