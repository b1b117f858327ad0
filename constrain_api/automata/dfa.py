"""Deterministic automata over bytes: construction, products, minimization.

Pipeline of ``ByteDFA.from_regex``: ``parse_regex`` → a Thompson NFA whose
edges are byte ranges (each ``CharSet`` becomes a small acyclic fragment built
from its UTF-8 range sequences, prefixes and suffixes shared) → subset
construction (each DFA state's moves are computed on the byte segments its
own NFA states' ranges cut the byte line into, so a state costs work in
proportion to its edges, never 256 steps per NFA state; the table is stored
over the global byte classes those boundaries define) → trim → Hopcroft
minimization, numbered canonically (breadth-first from the start, bytes in
increasing order), so two minimized automata of the same language have
identical tables.

Lookarounds arrive as ``Intersect``/``Difference`` nodes: the NFA builder
determinizes both operands (each within ``max_states``), combines them by a
product construction and embeds the resulting DFA as an NFA fragment.

Every construction checks ``max_states`` as it creates states and raises
``CompileLimitExceeded`` instead of running away: ``limit="states"`` for DFA
states (intermediate automata included), ``limit="nfa_states"`` for the NFA
(bound ``4 * max_states + 1000``; huge counted repeats).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Hashable, Iterable
from typing import TypeVar

import numpy as np

from ..budget import checkpoint
from ..caching import ContentCache, core_cache
from ..errors import CompileLimitExceeded
from .regex import (
    Alt,
    CharSet,
    Difference,
    Empty,
    Intersect,
    Literal,
    Node,
    Repeat,
    Seq,
    parse_regex,
)
from .utf8 import utf8_sequences

__all__ = ["DEFAULT_MAX_STATES", "ByteDFA"]

#: Default bound on the number of states of any automaton built here.
DEFAULT_MAX_STATES = 100_000


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _states_exceeded(max_states: int, value: int, what: str) -> CompileLimitExceeded:
    return CompileLimitExceeded("states", max_states, value, f"{what} needs more DFA states")


# ----------------------------------------------------------------- the class


def _dfa_bytes(dfa: ByteDFA) -> int:
    """Estimated bytes of a cached automaton: its tables, and the Python
    lists of ``rows`` (a pointer per entry) as if built."""
    return dfa.table.nbytes + dfa._classes[0].nbytes + dfa.num_states * 256 * 8


class Walking:
    """Scalar stepping shared by the byte automata (``ByteDFA``, ``LazyDFA``):
    they have ``start`` (``-1``: the empty language), ``rows[state][byte]``
    (``-1``: dead) and ``accept[state]``, and every state they have is live."""

    __slots__ = ()

    def step(self, state: int, byte: int) -> int:
        """The successor of ``state`` on ``byte``; ``-1`` if dead (or ``state`` is ``-1``)."""
        return self.rows[state][byte] if state >= 0 else -1

    def run(self, data: bytes, state: int | None = None) -> int:
        """The state after ``data`` from ``state`` (default: the start); ``-1`` if dead."""
        s = self.start if state is None else state
        rows = self.rows
        for b in data:
            if s < 0:
                return -1
            s = rows[s][b]
        return s

    def matches(self, data: bytes) -> bool:
        """Whether ``data`` is in the language (a full match)."""
        s = self.run(data)
        return s >= 0 and self.accept[s]

    def is_viable(self, data: bytes) -> bool:
        """Whether ``data`` is a prefix of some string of the language."""
        return self.run(data) >= 0


class ByteDFA(Walking):
    """Deterministic automaton over bytes; trimmed: every state is reachable and live
    (can reach an accepting state); the empty language has ``num_states == 0`` and
    ``start == -1``.

    Immutable. ``table[s, b]`` is the successor of state ``s`` on byte ``b``
    (``-1``: dead), ``accepting[s]`` whether ``s`` accepts. Because the
    automaton is trimmed, a text is a prefix of an accepted text exactly when
    running it does not reach ``-1``. ``rows``/``accept`` are the same data as
    Python lists (built on first use) for fast scalar stepping.
    """

    __slots__ = (
        "_accept",
        "_classes",
        "_minimal",
        "_rows",
        "_runs",
        "accepting",
        "num_states",
        "start",
        "table",
    )

    num_states: int
    start: int
    table: np.ndarray
    accepting: np.ndarray

    def __init__(self, table: np.ndarray, accepting: np.ndarray, start: int) -> None:
        """Wrap a full ``(n, 256)`` table (``-1`` = dead); unreachable and dead states
        are dropped (the result is trimmed, not minimized)."""
        table = np.asarray(table)
        accepting = np.asarray(accepting, dtype=bool)
        if table.ndim != 2 or table.shape[1] != 256:
            raise ValueError(f"table must have shape (n, 256), got {table.shape}")
        n = table.shape[0]
        if accepting.shape != (n,):
            raise ValueError(f"accepting must have shape ({n},), got {accepting.shape}")
        if n and (table.min() < -1 or table.max() >= n):
            raise ValueError("table entries must be -1 or state numbers")
        if not -1 <= start < max(n, 1) or (n == 0 and start != -1):
            raise ValueError(f"bad start state {start}")
        small, classmap = _compress(table.astype(np.int32))
        small, acc, st = _trim(small, accepting, start)
        self._set(small, classmap, acc, st, minimal=False)

    def _set(
        self,
        small: np.ndarray,
        classmap: np.ndarray,
        accepting: np.ndarray,
        start: int,
        minimal: bool,
    ) -> None:
        self.num_states = int(small.shape[0])
        self.start = int(start) if self.num_states else -1
        self.table = _frozen(np.ascontiguousarray(small[:, classmap], dtype=np.int32))
        self.accepting = _frozen(np.asarray(accepting, dtype=bool).copy())
        self._classes = (_frozen(small.astype(np.int32)), _frozen(classmap.astype(np.intp)))
        self._minimal = minimal
        self._rows: list[list[int]] | None = None
        self._runs: dict[int, tuple[tuple[int, int, int], ...]] = {}
        self._accept: list[bool] | None = None

    @classmethod
    def _build(
        cls,
        small: np.ndarray,
        classmap: np.ndarray,
        accepting: np.ndarray,
        start: int,
        *,
        minimize: bool = True,
        max_states: int | None = None,
        reachable: bool = False,
    ) -> ByteDFA:
        """From a class-compressed table (any states): trim, then minimize."""
        small, accepting, start = _trim(
            np.asarray(small, np.int32), accepting, start, reachable=reachable
        )
        if minimize and small.shape[0]:
            small, accepting, start = _minimize(small, accepting, start, classmap)
        if max_states is not None and small.shape[0] > max_states:
            raise _states_exceeded(max_states, small.shape[0], "the automaton")
        self = cls.__new__(cls)
        self._set(small, classmap, accepting, start, minimal=minimize)
        return self

    # -- stepping

    @property
    def rows(self) -> list[list[int]]:
        """The table as Python lists (``rows[s][b]``), cached."""
        if self._rows is None:
            self._rows = self.table.tolist()
        return self._rows

    def runs_of(self, state: int) -> tuple[tuple[int, int, int], ...]:
        """``state``'s row as ``(lo, hi, target)`` ranges of live targets
        (cached): the few pieces a walk can step without reading 256 entries
        (as ``LazyDFA.runs_of``)."""
        runs = self._runs.get(state)
        if runs is None:
            row = self.table[state]
            cuts = (np.flatnonzero(np.diff(row)) + 1).tolist()
            starts, ends = [0, *cuts], [*(c - 1 for c in cuts), 255]
            runs = self._runs[state] = tuple(  # (a tuple: the collector stops tracking it)
                (lo, hi, target)
                for lo, hi, target in zip(starts, ends, row[starts].tolist(), strict=True)
                if target >= 0
            )
        return runs

    @property
    def accept(self) -> list[bool]:
        """``accepting`` as a Python list, cached."""
        if self._accept is None:
            self._accept = self.accepting.tolist()
        return self._accept

    def is_empty(self) -> bool:
        """Whether the language is empty."""
        return self.num_states == 0

    def accepts_empty(self) -> bool:
        """Whether the empty string is in the language."""
        return self.num_states > 0 and bool(self.accepting[self.start])

    def byte_classes(self) -> tuple[np.ndarray, int]:
        """``(classmap, k)``: bytes with equal ``classmap`` values have equal table columns."""
        small, classmap = self._classes
        return classmap, int(small.shape[1])

    def digest(self) -> bytes:
        """A digest of the automaton as it is (table, acceptance, start):
        equal digests, the same automaton with the same state numbers, in
        any process (a key for what is stored on disk about its states)."""
        table = np.ascontiguousarray(self.table, dtype=np.int32)
        accepting = np.ascontiguousarray(self.accepting, dtype=np.bool_)
        h = hashlib.blake2b(repr((table.shape, self.start)).encode(), digest_size=16)
        h.update(table.tobytes())
        h.update(accepting.tobytes())
        return h.digest()

    def __repr__(self) -> str:
        return f"ByteDFA(num_states={self.num_states}, start={self.start})"

    # -- operations

    def minimize(self) -> ByteDFA:
        """The minimal automaton of the same language (Hopcroft), canonically numbered."""
        if self._minimal:
            return self
        small, classmap = self._classes
        return ByteDFA._build(small, classmap, self.accepting, self.start)

    def same_language(self, other: ByteDFA) -> bool:
        """Whether both automata accept the same byte strings."""
        a, b = self.minimize(), other.minimize()
        return (
            a.num_states == b.num_states
            and a.start == b.start
            and np.array_equal(a.accepting, b.accepting)
            and np.array_equal(a.table, b.table)
        )

    def intersect(self, other: ByteDFA, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
        """The strings both accept (product construction; trimmed and minimized)."""
        return _product(self, other, "and", max_states=max_states)

    def union(self, other: ByteDFA, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
        """The strings either accepts (product construction; trimmed and minimized)."""
        return _product(self, other, "or", max_states=max_states)

    def difference(self, other: ByteDFA, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
        """The strings this accepts and ``other`` does not (product; trimmed and minimized)."""
        return _product(self, other, "minus", max_states=max_states)

    def complement(self, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
        """The valid UTF-8 strings this does not accept (``any_utf8().difference(self)``)."""
        return _any_utf8().difference(self, max_states=max_states)

    def shortest(self) -> ByteDFA:
        """The prefix-free reduction: the accepted strings none of whose proper
        prefixes is accepted (trimmed and minimized).

        The out-transitions of accepting states are removed, then the
        automaton is trimmed. For a pattern whose quantifiers are all lazy
        (``quantifier_modes(p) <= {"lazy"}``) these are the texts ``s`` on
        which ``re.match(p, s)`` matches all of ``s`` — what a lexer takes.
        """
        if self.is_empty():
            return self
        small, classmap = self._classes
        small = small.copy()
        small[self.accepting] = -1
        return ByteDFA._build(small, classmap, self.accepting, self.start)

    # -- constructors

    @classmethod
    def from_regex(
        cls,
        pattern: str,
        *,
        max_states: int = DEFAULT_MAX_STATES,
        whole_text: bool = False,
        node: Node | None = None,
    ) -> ByteDFA:
        """The minimal DFA of ``re.fullmatch(pattern, text)`` over UTF-8 (see ``parse_regex``,
        which also explains ``whole_text``). Cached by the pattern's text and
        the arguments (the core cache ``"regex automata"``): the JSON string,
        number and literal terminals every schema has are built once.
        ``node``: ``pattern``'s AST if the caller has it (not parsed then;
        it must have the pattern's language)."""
        key = (pattern, max_states, whole_text)
        dfa = _REGEX_AUTOMATA.get(key)
        if dfa is None:
            if node is None:
                node = parse_regex(pattern, whole_text=whole_text)
            dfa = _REGEX_AUTOMATA.put(key, cls.from_node(node, max_states=max_states))
        return dfa

    @classmethod
    def from_node(cls, node: Node, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
        """The minimal DFA of a regex AST node, over the UTF-8 encodings of its strings."""
        nfa = _NFA(nfa_limit(max_states), max_states)
        start, final = nfa.state(), nfa.state()
        try:
            nfa.build(node, start, final)
        except RecursionError:
            raise CompileLimitExceeded(
                "nesting", 0, None, "the regex AST is nested too deeply"
            ) from None
        small, classmap, accepting = _determinize(nfa, start, final, max_states)
        return cls._build(small, classmap, accepting, 0, max_states=max_states, reachable=True)

    @classmethod
    def literal(cls, data: bytes) -> ByteDFA:
        """Exactly the byte string ``data`` (any bytes)."""
        return cls.from_strings([data])

    @classmethod
    def from_strings(
        cls, options: Iterable[bytes], *, max_states: int = DEFAULT_MAX_STATES
    ) -> ByteDFA:
        """A finite language: exactly the given byte strings (a trie, then minimized)."""
        children: list[dict[int, int]] = [{}]
        final = [False]
        for option in options:
            node = 0
            for b in bytes(option):
                nxt = children[node].get(b)
                if nxt is None:
                    nxt = len(children)
                    if nxt > max_states:
                        raise _states_exceeded(max_states, nxt, "the string trie")
                    children[node][b] = nxt
                    children.append({})
                    final.append(False)
                node = nxt
            final[node] = True
        used = sorted({b for c in children for b in c})
        classmap = np.full(256, len(used), dtype=np.intp)
        classmap[used] = np.arange(len(used))
        col = {b: i for i, b in enumerate(used)}
        small = np.full((len(children), len(used) + 1), -1, dtype=np.int32)
        for s, c in enumerate(children):
            for b, t in c.items():
                small[s, col[b]] = t
        return cls._build(small, classmap, np.array(final), 0)

    @classmethod
    def any_utf8(cls) -> ByteDFA:
        """All valid UTF-8 strings (any code points, any length)."""
        return _any_utf8()

    @classmethod
    def empty(cls) -> ByteDFA:
        """The empty language (no states)."""
        return cls._build(np.zeros((0, 1), np.int32), np.zeros(256, np.intp), np.zeros(0, bool), -1)


@functools.cache
def _any_utf8() -> ByteDFA:
    return ByteDFA.from_node(Repeat(CharSet.any(), 0, None))


# ------------------------------------------------------- table utilities


def _compress(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(small, classmap)`` with ``table == small[:, classmap]`` and distinct columns."""
    if table.shape[0] == 0:
        return np.zeros((0, 1), np.int32), np.zeros(256, np.intp)
    cols, classmap = np.unique(table.T, axis=0, return_inverse=True)
    return np.ascontiguousarray(cols.T, dtype=np.int32), classmap.reshape(-1).astype(np.intp)


#: Tables up to this many entries are walked with Python lists: a numpy call
#: per BFS level costs more than the whole walk on a small automaton.
_SMALL_TABLE = 1 << 15


def _bfs_order(small: np.ndarray, start: int) -> np.ndarray:
    """States reachable from ``start`` in breadth-first order (columns in given order)."""
    n = small.shape[0]
    if small.size <= _SMALL_TABLE:
        rows = small.tolist()
        seen = [False] * n
        seen[start] = True
        order = [start]
        for q in order:  # (grows while iterated: a FIFO queue)
            for t in rows[q]:
                if t >= 0 and not seen[t]:
                    seen[t] = True
                    order.append(t)
        return np.array(order, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    seen[start] = True
    frontier = np.array([start], dtype=np.int64)
    levels = [frontier]
    while frontier.size:
        succ = small[frontier].ravel()
        succ = succ[succ >= 0]
        succ = succ[~seen[succ]]
        if not succ.size:
            break
        u, first = np.unique(succ, return_index=True)
        frontier = u[np.argsort(first, kind="stable")].astype(np.int64)
        seen[frontier] = True
        levels.append(frontier)
    return np.concatenate(levels)


def _coreachable(small: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Mask of the states from which an accepting state is reachable."""
    n = small.shape[0]
    if small.size <= _SMALL_TABLE:
        preds: list[list[int]] = [[] for _ in range(n)]
        for q, row in enumerate(small.tolist()):
            for t in row:
                if t >= 0:
                    preds[t].append(q)
        alive = np.asarray(accepting, dtype=bool).tolist()
        todo = [q for q in range(n) if alive[q]]
        for q in todo:  # (grows while iterated)
            for p in preds[q]:
                if not alive[p]:
                    alive[p] = True
                    todo.append(p)
        return np.array(alive, dtype=bool)
    live = np.asarray(accepting, dtype=bool).copy()
    src, cls = np.nonzero(small >= 0)
    if not src.size:
        return live
    dst = small[src, cls].astype(np.int64)
    pairs = np.unique(dst * n + src)
    dst_u, src_u = pairs // n, pairs % n
    indptr = np.searchsorted(dst_u, np.arange(n + 1))
    frontier = np.flatnonzero(live)
    while frontier.size:
        starts, ends = indptr[frontier], indptr[frontier + 1]
        counts = ends - starts
        total = int(counts.sum())
        if not total:
            break
        offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
        preds = src_u[offsets + np.arange(total)]
        preds = np.unique(preds)
        preds = preds[~live[preds]]
        live[preds] = True
        frontier = preds
    return live


def _renumber(
    small: np.ndarray, accepting: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Keep the states in ``order`` (old numbers), numbered by position; others become -1."""
    n = small.shape[0]
    new = np.full(n + 1, -1, dtype=np.int32)  # new[-1] = -1 maps dead to dead
    new[order] = np.arange(order.size, dtype=np.int32)
    return new[small[order]], np.asarray(accepting, dtype=bool)[order]


def _trim(
    small: np.ndarray, accepting: np.ndarray, start: int, *, reachable: bool = False
) -> tuple[np.ndarray, np.ndarray, int]:
    """Drop unreachable and dead states (start becomes 0, or -1 if the language is empty).

    ``reachable=True`` promises every state is reachable with ``start == 0``
    (subset construction): then only dead states are dropped, order kept.
    """
    accepting = np.asarray(accepting, dtype=bool)
    if start < 0 or small.shape[0] == 0:
        return np.zeros((0, small.shape[1]), np.int32), np.zeros(0, bool), -1
    live = _coreachable(small, accepting)
    if not live[start]:
        return np.zeros((0, small.shape[1]), np.int32), np.zeros(0, bool), -1
    pruned = np.where(live[np.maximum(small, 0)] & (small >= 0), small, -1).astype(np.int32)
    # (with everything reachable, a path from the start to a live state only
    # visits live states: dropping the dead ones keeps the rest reachable)
    order = np.flatnonzero(live) if reachable and start == 0 else _bfs_order(pruned, start)
    s2, a2 = _renumber(pruned, accepting, order)
    return s2, a2, 0


def _predecessor_masks(small: np.ndarray, preds: list[list[tuple[int, int]]]) -> None:
    """Append to ``preds[q]`` each ``(s, mask)``: the classes from ``s`` to ``q`` as bits."""
    n, k = small.shape
    src, cls = np.nonzero(small >= 0)
    dst = small[src, cls].astype(np.int64)
    if not dst.size:
        return
    order = np.lexsort((cls, src, dst))
    src, cls, dst = src[order], cls[order], dst[order]
    key = dst * n + src
    starts = np.concatenate([[0], np.flatnonzero(np.diff(key)) + 1])
    masks = [0] * starts.size
    for w in range((k + 63) // 64):
        inword = (cls >= 64 * w) & (cls < 64 * (w + 1))
        bits = np.where(inword, np.left_shift(np.uint64(1), (cls % 64).astype(np.uint64)), 0)
        words = np.bitwise_or.reduceat(bits.astype(np.uint64), starts).tolist()
        masks = words if w == 0 else [m | x << 64 * w for m, x in zip(masks, words, strict=True)]
    for q, s, m in zip(dst[starts].tolist(), src[starts].tolist(), masks, strict=True):
        preds[q].append((s, m))


def _hopcroft(small: np.ndarray, accepting: np.ndarray) -> list[int]:
    """Block number of each state in the coarsest partition compatible with the DFA.

    Hopcroft's algorithm on a *partial*, trimmed DFA (no sink state; every
    initial block goes into the worklist, after Valmari & Lehtinen). A popped
    block ``A`` splits by all classes at once: each predecessor ``s`` gets the
    bitmask of classes leading from ``s`` into ``A``, and every block splits
    by that mask (the common refinement of the per-class splits). The part
    keeping the block's number is the untouched rest or the largest part; the
    other parts go into the worklist (plus the block itself when it was not
    there and the largest part was carved out).
    """
    n = small.shape[0]
    preds: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    if small.size <= _SMALL_TABLE // 8:
        for s, row in enumerate(small.tolist()):
            into: dict[int, int] = {}
            for c, q in enumerate(row):
                if q >= 0:
                    into[q] = into.get(q, 0) | (1 << c)
            for q, m in into.items():
                preds[q].append((s, m))
    else:
        _predecessor_masks(small, preds)

    acc = np.asarray(accepting, dtype=bool)
    elems: list[int] = np.concatenate([np.flatnonzero(acc), np.flatnonzero(~acc)]).tolist()
    pos = [0] * n
    for i, s in enumerate(elems):
        pos[s] = i
    nf = int(acc.sum())
    if 0 < nf < n:
        block_of = np.where(acc, 0, 1).tolist()
        bstart, bend = [0, nf], [nf, n]
    else:
        block_of = [0] * n
        bstart, bend = [0], [n]
    in_work = [True] * len(bstart)
    work = list(range(len(bstart)))

    while work:
        checkpoint()
        a_block = work.pop()
        in_work[a_block] = False
        into: dict[int, int] = {}
        for q in elems[bstart[a_block] : bend[a_block]]:
            for s, m in preds[q]:
                into[s] = into.get(s, 0) | m
        groups: dict[int, dict[int, list[int]]] = {}
        for s, m in into.items():
            b = block_of[s]
            g = groups.get(b)
            if g is None:
                groups[b] = {m: [s]}
            else:
                lst = g.get(m)
                if lst is None:
                    g[m] = [s]
                else:
                    lst.append(s)
        for b, g in groups.items():
            size = bend[b] - bstart[b]
            parts = list(g.values())
            rest = size - sum(len(p) for p in parts)
            if rest == 0 and len(parts) == 1:
                continue
            largest = max(parts, key=len)
            if rest:
                carve = parts  # the untouched rest keeps the number b
                keep_is_largest = rest >= len(largest)
            else:
                carve = [p for p in parts if p is not largest]
                keep_is_largest = True
            was_in_work = in_work[b]
            cursor = bstart[b]
            for part in carve:
                nb = len(bstart)
                bstart.append(cursor)
                for s in part:
                    p = pos[s]
                    t = elems[cursor]
                    elems[cursor] = s
                    pos[s] = cursor
                    elems[p] = t
                    pos[t] = p
                    block_of[s] = nb
                    cursor += 1
                bend.append(cursor)
                if was_in_work or keep_is_largest or part is not largest:
                    work.append(nb)
                    in_work.append(True)
                else:
                    in_work.append(False)
            bstart[b] = cursor
            if not was_in_work and not keep_is_largest:
                work.append(b)
                in_work[b] = True
    return block_of


def _minimize(
    small: np.ndarray, accepting: np.ndarray, start: int, classmap: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """Quotient by Hopcroft's partition, numbered canonically (BFS, bytes ascending)."""
    blocks = np.asarray(_hopcroft(small, accepting), dtype=np.int32)
    nb = int(blocks.max()) + 1
    rep = np.zeros(nb, dtype=np.int64)
    rep[blocks] = np.arange(blocks.size)
    ext = np.append(blocks, np.int32(-1))
    quotient = ext[small[rep]]
    acc = np.asarray(accepting, dtype=bool)[rep]
    # canonical numbering: BFS with the classes visited in byte order
    _, first = np.unique(classmap, return_index=True)
    corder = np.argsort(first, kind="stable")
    order = _bfs_order(quotient[:, corder], int(blocks[start]))
    s2, a2 = _renumber(quotient, acc, order)
    return s2, a2, 0


def _product(a: ByteDFA, b: ByteDFA, op: str, *, max_states: int) -> ByteDFA:
    """``op``: ``"and"`` (intersection), ``"or"`` (union), ``"minus"`` (difference)."""
    if a.is_empty() or b.is_empty():
        if op == "and" or (op == "minus" and a.is_empty()):
            return ByteDFA.empty()
        return (b if a.is_empty() else a).minimize()
    sa, ma = a._classes
    sb, mb = b._classes
    kb = sb.shape[1]
    joint = ma.astype(np.int64) * kb + mb
    _, rep, classmap = np.unique(joint, return_index=True, return_inverse=True)
    classmap = classmap.reshape(-1).astype(np.intp)
    na_, nb_ = a.num_states, b.num_states
    # row na_/nb_ is the dead state; -1 entries point there
    ta = np.vstack([sa[:, ma[rep]], np.full((1, rep.size), -1, np.int32)]).astype(np.int64)
    tb = np.vstack([sb[:, mb[rep]], np.full((1, rep.size), -1, np.int32)]).astype(np.int64)
    ta[ta < 0] = na_
    tb[tb < 0] = nb_
    acc_a = np.append(a.accepting, False)
    acc_b = np.append(b.accepting, False)
    width = nb_ + 1

    def successors(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xa, xb = ta[codes // width], tb[codes % width]
        if op == "or":
            ok = (xa != na_) | (xb != nb_)
        elif op == "and":
            ok = (xa != na_) & (xb != nb_)
        else:
            ok = xa != na_
        return xa * width + xb, ok

    start = a.start * width + b.start
    seen = {start}
    frontier = np.array([start], dtype=np.int64)
    levels = [frontier]
    total = 1
    while frontier.size:
        checkpoint()
        codes, ok = successors(frontier)
        cand = np.unique(codes[ok]).tolist()
        new = [c for c in cand if c not in seen]
        if not new:
            break
        seen.update(new)
        total += len(new)
        if total > max_states:
            raise _states_exceeded(max_states, total, "the product automaton")
        frontier = np.array(new, dtype=np.int64)
        levels.append(frontier)
    codes_all = np.concatenate(levels)
    sorter = np.argsort(codes_all)
    sorted_codes = codes_all[sorter]
    codes, ok = successors(codes_all)
    idx = np.clip(np.searchsorted(sorted_codes, codes), 0, sorted_codes.size - 1)
    small = np.where(ok, sorter[idx], -1).astype(np.int32)
    pa, pb = codes_all // width, codes_all % width
    if op == "or":
        acc = acc_a[pa] | acc_b[pb]
    elif op == "and":
        acc = acc_a[pa] & acc_b[pb]
    else:
        acc = acc_a[pa] & ~acc_b[pb]
    return ByteDFA._build(small, classmap, acc, 0, max_states=max_states)


# ------------------------------------------------------------------ NFA


def nfa_limit(max_states: int) -> int:
    """The NFA states the core's construction builds at most for ``max_states``."""
    return 4 * max_states + 1000


def check_nfa_size(node: Node, limit: int | None = None, what: str = "") -> int:
    """The states the core's Thompson construction of ``node`` would create,
    counted on the AST (nothing built; a ``Repeat`` counts its copies);
    ``CompileLimitExceeded("nfa_states")`` past ``limit`` (default
    ``nfa_limit(DEFAULT_MAX_STATES)``, the bound the construction itself
    stops at). For engines that expand a regex in one call that cannot be
    interrupted: they refuse what the core's automata refuse, before starting."""
    memo: dict[Node, int] = {}

    def size(n: Node) -> int:
        found = memo.get(n)
        if found is not None:
            return found
        if isinstance(n, Literal):
            count = len(n.text.encode())
        elif isinstance(n, CharSet):
            count = _charset_template(n)[0]
        elif isinstance(n, Seq):
            count = sum(size(p) for p in n.parts) + len(n.parts)
        elif isinstance(n, Alt):
            count = sum(size(o) for o in n.options)
        elif isinstance(n, Repeat):
            copies = n.max if n.max is not None else n.min + 1
            count = max(copies, 1) * (size(n.node) + 1)
        elif isinstance(n, Intersect | Difference):
            count = size(n.left) + size(n.right)
        else:
            count = 1
        memo[n] = count
        return count

    try:
        total = size(node) + 2  # and the start and final states
    except RecursionError:
        raise CompileLimitExceeded(
            "nesting", 0, None, "the regex AST is nested too deeply"
        ) from None
    if limit is None:
        limit = nfa_limit(DEFAULT_MAX_STATES)
    if total > limit:
        where = f" ({what})" if what else ""
        raise CompileLimitExceeded(
            "nfa_states", limit, total, f"the regex expands to too many NFA states{where}"
        )
    return total


@functools.lru_cache(maxsize=512)
def _charset_template(cs: CharSet) -> tuple[int, tuple[tuple[int, int, int, int], ...]]:
    """An acyclic byte-range automaton for one character of ``cs``.

    Returns ``(num_states, edges)``: state 0 is the entry, 1 the exit, edges
    are ``(src, lo, hi, dst)``. Built as a trie of the UTF-8 range sequences
    with equal suffixes shared (so ``[80-BF]`` tails exist once).
    """
    children: list[dict[tuple[int, int], int]] = [{}]
    for sq in utf8_sequences(cs):
        node = 0
        for r in sq[:-1]:
            nxt = children[node].get(r)
            if nxt is None:
                nxt = len(children)
                children[node][r] = nxt
                children.append({})
            node = nxt
        children[node][sq[-1]] = -1
    canon = [0] * len(children)
    ids: dict[tuple, int] = {}
    for node in range(len(children) - 1, -1, -1):  # children come after parents
        sig = tuple(sorted((r, canon[c] if c >= 0 else -1) for r, c in children[node].items()))
        canon[node] = ids.setdefault(sig, len(ids))
    # number: entry 0, exit 1, the other classes from 2
    number = {canon[0]: 0}
    for cid in ids.values():
        if cid not in number:
            number[cid] = len(number) + 1
    number[-1] = 1
    edges = []
    for sig, cid in ids.items():
        for (lo, hi), child in sig:
            edges.append((number[cid], lo, hi, number[child]))
    return len(number) + 1, tuple(edges)


class _NFA:
    """A Thompson NFA over byte ranges, built by wiring fragments between given states."""

    __slots__ = ("_dfas", "edges", "eps", "limit", "max_states")

    def __init__(self, limit: int, max_states: int = DEFAULT_MAX_STATES) -> None:
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[int, int, int]]] = []
        self.limit = limit
        self.max_states = max_states
        self._dfas: dict[Node, ByteDFA] = {}

    def state(self) -> int:
        n = len(self.eps)
        if n >= self.limit:
            raise CompileLimitExceeded(
                "nfa_states", self.limit, n, "the regex expands to too many NFA states"
            )
        self.eps.append([])
        self.edges.append([])
        return n

    def build(self, node: Node, s: int, e: int) -> None:
        """Add paths from ``s`` to ``e`` spelling exactly the UTF-8 strings of ``node``.

        Only fresh states are created; nothing leads into ``s`` or out of ``e``
        (except through ``s``/``e`` being the same loop state a caller chose).
        """
        if isinstance(node, Literal):
            data = node.text.encode()
            cur = s
            for i, byte in enumerate(data):
                nxt = e if i == len(data) - 1 else self.state()
                self.edges[cur].append((byte, byte, nxt))
                cur = nxt
        elif isinstance(node, CharSet):
            count, edges = _charset_template(node)
            ids = [s, e] + [self.state() for _ in range(count - 2)]
            for a, lo, hi, b in edges:
                self.edges[ids[a]].append((lo, hi, ids[b]))
        elif isinstance(node, Seq):
            if not node.parts:
                self.eps[s].append(e)
                return
            cur = s
            for i, part in enumerate(node.parts):
                nxt = e if i == len(node.parts) - 1 else self.state()
                self.build(part, cur, nxt)
                cur = nxt
        elif isinstance(node, Alt):
            for option in node.options:
                self.build(option, s, e)
        elif isinstance(node, Empty):
            self.eps[s].append(e)
        elif isinstance(node, Repeat):
            self.repeat(node, s, e)
        elif isinstance(node, Intersect | Difference):
            self.embed(self.operation(node), s, e)
        else:
            raise TypeError(f"not a regex AST node: {node!r}")

    def operation(self, node: Intersect | Difference) -> ByteDFA:
        """The DFA of an ``Intersect``/``Difference`` node (cached per NFA)."""
        dfa = self._dfas.get(node)
        if dfa is None:
            ms = self.max_states
            left = ByteDFA.from_node(node.left, max_states=ms)
            right = ByteDFA.from_node(node.right, max_states=ms)
            if isinstance(node, Intersect):
                dfa = left.intersect(right, max_states=ms)
            else:
                dfa = left.difference(right, max_states=ms)
            self._dfas[node] = dfa
        return dfa

    def embed(self, dfa: ByteDFA, s: int, e: int) -> None:
        """Add a copy of ``dfa`` (fresh states) between ``s`` and ``e``."""
        if dfa.is_empty():
            return
        ids = [self.state() for _ in range(dfa.num_states)]
        self.eps[s].append(ids[dfa.start])
        table = dfa.table
        cuts = np.flatnonzero(np.any(table[:, 1:] != table[:, :-1], axis=0)) + 1
        starts = [0, *cuts.tolist()]
        ends = [*(c - 1 for c in cuts.tolist()), 255]
        runs = table[:, starts].tolist()  # the target of each run, per state
        for q, row in enumerate(runs):
            out = self.edges[ids[q]]
            prev = -1
            for lo, hi, t in zip(starts, ends, row, strict=True):
                if t < 0:
                    prev = -1
                elif t == prev:  # extend the previous range
                    out[-1] = (out[-1][0], hi, out[-1][2])
                else:
                    out.append((lo, hi, ids[t]))
                    prev = t
            if dfa.accept[q]:
                self.eps[ids[q]].append(e)

    def repeat(self, node: Repeat, s: int, e: int) -> None:
        x, lo, hi = node.node, node.min, node.max
        cur = s
        for i in range(lo):
            nxt = e if (hi == lo and i == lo - 1) else self.state()
            self.build(x, cur, nxt)
            cur = nxt
        if hi is None:
            loop = self.state()
            self.eps[cur].append(loop)
            self.build(x, loop, loop)
            self.eps[loop].append(e)
            return
        optional = hi - lo
        if optional == 0 and lo == 0:
            self.eps[s].append(e)
        for i in range(optional):
            # each optional copy may be skipped along with all later ones
            nxt = e if i == optional - 1 else self.state()
            self.eps[cur].append(e)
            self.build(x, cur, nxt)
            cur = nxt


T = TypeVar("T", bound=Hashable)


def byte_segments(es: list[tuple[int, int, T]]) -> list[tuple[int, int, frozenset[T]]]:
    """The byte line cut by the ranges of the edges ``es`` (``(lo, hi,
    target)``, any hashable targets): ``(lo, hi, targets)`` for each piece
    some edge covers, in byte order (a subset construction's step of a
    state from its members' edges)."""
    if len(es) == 1:
        lo, hi, t = es[0]
        return [(lo, hi, frozenset((t,)))]
    if not es:
        return []
    points = sorted({p for lo, hi, _ in es for p in (lo, hi + 1)})
    index = {p: k for k, p in enumerate(points)}
    cover: list[list[T] | None] = [None] * (len(points) - 1)
    for lo, hi, t in es:
        for k in range(index[lo], index[hi + 1]):
            lst = cover[k]
            if lst is None:
                cover[k] = [t]
            else:
                lst.append(t)
    return [
        (points[k], points[k + 1] - 1, frozenset(ts))
        for k, ts in enumerate(cover)
        if ts is not None
    ]


def _determinize(
    nfa: _NFA, start: int, final: int, max_states: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Subset construction: ``(small table over byte classes, classmap, accepting)``.

    Each DFA state's transitions are computed as byte segments (the pieces
    its NFA states' ranges cut the byte line into), so a state costs work in
    proportion to its own edges, not to the number of global byte classes.
    """
    edges = nfa.edges
    eps = nfa.eps
    n_nfa = len(eps)
    important = [bool(edges[q]) or q == final for q in range(n_nfa)]
    closures: list[frozenset[int] | None] = [None] * n_nfa

    def closure(q: int) -> frozenset[int]:
        c = closures[q]
        if c is not None:
            return c
        if not eps[q]:  # (most states: no ε-move)
            c = closures[q] = frozenset((q,)) if important[q] else frozenset()
            return c
        seen = {q}
        stack = [q]
        while stack:
            u = stack.pop()
            for v in eps[u]:
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
        c = frozenset(v for v in seen if important[v])
        closures[q] = c
        return c

    first = closure(start)
    ids: dict[frozenset[int], int] = {first: 0}
    sets: list[frozenset[int]] = [first]
    by_targets: dict[frozenset[int], int] = {}
    out_state: list[int] = []
    out_lo: list[int] = []
    out_hi: list[int] = []
    out_to: list[int] = []

    def target(key: frozenset[int]) -> int:
        j = by_targets.get(key)
        if j is None:
            if len(key) == 1:
                (t,) = key
                closed = closures[t] or closure(t)
            else:
                closed = frozenset().union(*[closures[t] or closure(t) for t in key])
            j = ids.get(closed)
            if j is None:
                j = len(sets)
                if j >= max_states:
                    raise _states_exceeded(max_states, j + 1, "determinizing the regex")
                ids[closed] = j
                sets.append(closed)
            by_targets[key] = j
        return j

    i = 0
    while i < len(sets):
        checkpoint()
        members = sets[i]
        if len(members) == 1:
            (q,) = members
            es = edges[q]
        else:
            es = [e for q in members for e in edges[q]]
        segments = byte_segments(es)
        for lo, hi, key in segments:
            out_state.append(i)
            out_lo.append(lo)
            out_hi.append(hi)
            out_to.append(target(key))
        i += 1

    # global byte classes: the segment boundaries are NFA range boundaries
    cuts = sorted({0, 256, *out_lo, *(h + 1 for h in out_hi)})
    classmap = np.zeros(256, dtype=np.intp)
    for k in range(len(cuts) - 1):
        classmap[cuts[k] : cuts[k + 1]] = k
    n = len(sets)
    small = np.full((n, len(cuts) - 1), -1, dtype=np.int32)
    if out_state:
        clo = classmap[np.array(out_lo)]
        lens = classmap[np.array(out_hi)] + 1 - clo
        rows = np.repeat(np.array(out_state, dtype=np.int64), lens)
        offsets = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        small[rows, np.repeat(clo, lens) + offsets] = np.repeat(np.array(out_to), lens)
    accepting = np.array([final in st for st in sets], dtype=bool)
    return small, classmap, accepting


#: ``from_regex`` results by (pattern, max_states, whole_text): at most
#: 1,024 automata and about 256 MiB (an automaton larger than that is not kept).
_REGEX_AUTOMATA: ContentCache[ByteDFA] = core_cache(
    "regex automata", ContentCache(1024, sizeof=_dfa_bytes, max_bytes=256 << 20)
)
