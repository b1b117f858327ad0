"""A byte DFA built on demand: subset construction over the regex's partial
derivatives, one state at a time, as a walk asks for it.

``ByteDFA.from_node`` determinizes and minimizes a whole regex before
anything can use it; a backend that only walks the states a decoding visits
(``domino``'s scanner) pays for thousands of states it never meets, on
every schema not seen before. ``LazyDFA`` computes a state's transitions
the first time ``rows[state]`` is read.

Its states are sets of *terms*: what is left of the regex after the bytes
read so far (Antimirov's partial derivatives, over UTF-8 bytes: a character
class is the alternation of its byte-range sequences, a counted repetition
keeps its counts, an ``Intersect``/``Difference`` (a lookaround's) is
the product of its two sides' term sets, stepped together). Terms are
interned by structure, so two ways of reaching the same remainder are one
term: the copies of a shared continuation that a Thompson NFA keeps apart
(an object's remaining members after each optional one) are one state
here, as in the minimal DFA. Every term has some string
(void pieces are dropped as terms are made; a product is made a term only
once a short string of one side is read by the other, or a search of the
products it leads to found one that accepts), so every
state found is live and ``-1`` means dead, as in a ``ByteDFA``. Not
minimized otherwise. A lookaround's automaton is never built whole: a
format or a pattern intersected with a JSON string costs the states a walk
visits, not the full product's.

The regex itself is taken apart as lazily: an alternation of the AST is
one term until a state's row first needs its first bytes, and then only
its options are made terms, down to their own alternations. A schema's
terminal (an object's body: members, optional members, values, each an
alternation) costs little to make; a walk pays for the parts it reaches.

Thread-safe: states are found under a lock, and a row, once in ``rows``,
never changes.
"""

from __future__ import annotations

import hashlib
import heapq
import threading
import weakref

import numpy as np

from ..budget import checkpoint
from ..caching import ContentCache, core_cache
from ..errors import CompileLimitExceeded
from . import regex as rx
from .dfa import (
    _REGEX_AUTOMATA,
    DEFAULT_MAX_STATES,
    ByteDFA,
    Walking,
    _states_exceeded,
    byte_segments,
    nfa_limit,
)
from .utf8 import utf8_sequences

__all__ = ["LazyDFA", "TermTable", "has_string", "regex_automaton"]

_EPS = 0  # the term of the empty string

#: Products (an intersection's or difference's pairs of term sets) one
#: search for a string may meet before ``CompileLimitExceeded``: what the
#: minimal automaton of the same node may have (``DEFAULT_MAX_STATES``).
PRODUCT_SEARCH_BOUND = DEFAULT_MAX_STATES

#: the parts of a sequence ``TermTable.relaxed`` looks at (a state inside a
#: counted string has the count first, or after the rest of an escape)
_RELAXED_PARTS = 4


class TermTable:
    """Interned terms (``int`` ids), their nullability and linear forms:
    the terms of one or more ``LazyDFA``s. The automata of one grammar's
    terminals share one (``LazyDFA(..., terms=table)``): their regexes
    share pieces (a JSON string, an object's remaining members), which are
    then taken apart, and their continuations found, once. Its bound on
    terms is the sum of its automata's (``limit``, raised by each); its
    lock serializes their walks.

    A term is ``("e",)`` (the empty string), ``("r", lo, hi)`` (one byte in
    a range), ``("l", data)`` (exactly these bytes, taken apart one byte at
    a time as walks read them), ``("s", a, b)`` (``a`` then ``b``),
    ``("a", ids)`` (any of: a sorted tuple),
    ``("k", x, m, n)`` (``x`` ``m`` to ``n`` times, ``None``: unbounded),
    ``("x", op, left, right)`` (the strings of any of the terms ``left``
    that are (``op`` ``"and"``) or are not (``"minus"``) strings of any of
    the terms ``right``: an ``Intersect``/``Difference``, a lookaround's,
    stepped as a product of the two sides' term sets), ``("u",
    sequences)`` (any of these byte-range sequences: a character class's
    UTF-8 encodings, its linear form one item per distinct leading range,
    their rests a ``"u"`` term again) or ``("n", node)`` (an ``Alt`` of
    the AST not taken apart yet: its linear form is that of its options'
    terms). ``None``
    stands for the empty language: constructors drop it, so every term has
    some string. The *linear form* of a term is its ``(lo, hi, term)``
    continuations: the term's strings starting with byte ``b`` are ``b``
    followed by a continuation whose range holds ``b``.
    """

    def __init__(self) -> None:
        self.limit = 0
        self.lock = threading.Lock()  # held by whoever makes terms (its automata's walks)
        self.ids: dict[tuple, int] = {("e",): _EPS}
        self.defs: list[tuple] = [("e",)]
        self.nullable: list[bool] = [True]
        self.forms: list[tuple | None] = [()]
        self.leaves: dict[rx.Node, int | None] = {}  # literal, class, product terms by node
        # products ("x" keys) that have no string, and ones known to have
        # one but not made terms yet (met by a search, see _has_string)
        self._void_products: set[tuple] = set()
        self._live_products: set[tuple] = set()
        self._least: dict[int, int] = {}  # _min_length's memo
        self._witnesses: dict[int, bytes | None] = {}  # _witness's memo
        self._digests: dict[int, bytes] = {}  # digest()'s memo
        self._node_digests: dict[int, tuple[rx.Node, bytes]] = {}  # by id(node)

    def _make(self, key: tuple, nullable: bool) -> int:
        t = self.ids.get(key)
        if t is None:
            t = len(self.defs)
            if t >= self.limit:
                raise CompileLimitExceeded(
                    "nfa_states", self.limit, t, "the regex expands to too many terms"
                )
            self.ids[key] = t
            self.defs.append(key)
            self.nullable.append(nullable)
            self.forms.append(None)
        return t

    def byte_range(self, lo: int, hi: int) -> int:
        return self._make(("r", lo, hi), False)

    def seq(self, a: int | None, b: int | None) -> int | None:
        if a is None or b is None:
            return None
        if a == _EPS:
            return b
        if b == _EPS:
            return a
        heads = []  # right-nested, so one sequence has one term
        while self.defs[a][0] == "s":
            _, head, a = self.defs[a]
            heads.append(head)
        heads.append(a)
        nullable = self.nullable
        for head in reversed(heads):
            b = self._make(("s", head, b), nullable[head] and nullable[b])
        return b

    def alt(self, options: set[int]) -> int | None:
        if not options:
            return None
        if len(options) == 1:
            return next(iter(options))
        flat: set[int] = set()
        for t in options:  # (nested alternatives are one)
            d = self.defs[t]
            flat.update(d[1]) if d[0] == "a" else flat.add(t)
        key = tuple(sorted(flat))  # (a tuple of ints: untracked by the collector)
        return self._make(("a", key), any(self.nullable[t] for t in key))

    def rep(self, x: int | None, lo: int, hi: int | None) -> int | None:
        if hi == 0 or x == _EPS:
            return _EPS
        if x is None:
            return _EPS if lo == 0 else None
        if self.nullable[x]:
            lo = 0  # (x{m,n} is x{0,n} when x matches the empty string)
        if (lo, hi) == (1, 1):
            return x
        return self._make(("k", x, lo, hi), lo == 0)

    def relaxed(self, t: int, width: int) -> int:
        """A term with the strings of at most ``width`` bytes that ``t``
        has, and the same ones of them that can go on: the counted
        repetitions among the first parts of ``t``'s sequence that no
        ``width`` bytes can exhaust made unbounded (``x{m,n}`` with ``n >
        width`` becomes ``x{min(m, width + 1),}``, ``x{m,}`` with ``m >
        width`` becomes ``x{width + 1,}``); ``t`` itself where there are
        none. Sound because each round of a repetition takes a byte or
        more (or none, where ``x`` has the empty string: then its count
        never matters), so ``width`` bytes reach no count past ``width``;
        whatever comes after such a piece is the same term."""
        heads: list[int] = []
        rest = t
        while self.defs[rest][0] == "s" and len(heads) < _RELAXED_PARTS:
            _, head, rest = self.defs[rest]
            heads.append(head)
        parts = [self._relaxed_rep(h, width) for h in heads]
        last = self._relaxed_rep(rest, width)
        if last == rest and parts == heads:
            return t
        for head in reversed(parts):
            last = self.seq(head, last)
        return last

    def _relaxed_rep(self, t: int, width: int) -> int:
        """``t`` made unbounded if it is a repetition whose bounds lie
        beyond ``width`` rounds (see :meth:`relaxed`), else ``t``."""
        d = self.defs[t]
        if d[0] != "k" or not ((d[3] is not None and d[3] > width) or d[2] > width):
            return t
        return self.rep(d[1], min(d[2], width + 1), None)

    def digest(self, t: int) -> bytes:
        """A digest of term ``t``'s structure (its kind, its fields, its
        parts' digests, an alternation's and a product's sides as sorted
        sets, the AST of a part not taken apart yet): the same for the same
        term in any table and any process, whatever the ids and the order
        terms were made in, so it can key what outlives the process (equal
        digests, equal languages). Memoized; the caller holds ``lock``."""
        memo = self._digests
        known = memo.get(t)
        if known is not None:
            return known
        todo = [t]  # (parts first, without recursion: sequences nest deeply)
        while todo:
            u = todo[-1]
            if u in memo:
                todo.pop()
                continue
            missing = [v for v in self._parts(u) if v not in memo]
            if missing:
                todo.extend(missing)
                continue
            todo.pop()
            memo[u] = self._digest_of(u)
        return memo[t]

    def _parts(self, t: int) -> tuple[int, ...]:
        """The terms ``t`` is made of."""
        d = self.defs[t]
        op = d[0]
        if op == "s":
            return (d[1], d[2])
        if op == "a":
            return tuple(d[1])
        if op == "k":
            return (d[1],)
        if op == "x":
            return (*d[2], *d[3])
        return ()

    def _digest_of(self, t: int) -> bytes:
        """:meth:`digest` of ``t``, its parts' already known."""
        d, memo = self.defs[t], self._digests
        op = d[0]
        h = hashlib.blake2b(op.encode(), digest_size=16)
        if op == "s":
            h.update(memo[d[1]] + memo[d[2]])
        elif op == "a":
            h.update(b"".join(sorted(memo[u] for u in d[1])))
        elif op == "k":
            h.update(memo[d[1]] + repr((d[2], d[3])).encode())
        elif op == "x":
            left = b"".join(sorted(memo[u] for u in d[2]))
            right = b"".join(sorted(memo[u] for u in d[3]))
            h.update(repr((d[1], len(d[2]), len(d[3]))).encode() + left + right)
        elif op == "n":
            h.update(self._node_digest(d[1]))
        elif op == "l":
            h.update(d[1])
        else:  # "e", "r", "u": plain data
            h.update(repr(d[1:]).encode())
        return h.digest()

    def _node_digest(self, node: rx.Node) -> bytes:
        """A digest of an AST's structure (iterative; memoized by node
        identity, the node kept alive with its digest: an AST's nodes are
        compared by identity, never by value, which would walk them)."""
        memo = self._node_digests
        found = memo.get(id(node))
        if found is not None:
            return found[1]
        blake = hashlib.blake2b
        todo = [node]
        while todo:
            n = todo.pop()
            if id(n) in memo:
                continue
            kind = type(n)
            if kind is rx.Literal:
                data = b"L" + n.text.encode("utf-8", "surrogatepass")
            elif kind is rx.CharSet:
                data = b"C" + repr(n.ranges).encode()
            else:
                parts = _node_parts(n)
                missing = [p for p in parts if id(p) not in memo]
                if missing:
                    todo.append(n)
                    todo.extend(missing)
                    continue
                data = _NODE_TAGS[kind] + b"".join([memo[id(p)][1] for p in parts])
                if kind is rx.Repeat:
                    data += repr((n.min, n.max)).encode()
            memo[id(n)] = (n, blake(data, digest_size=16).digest())
        return memo[id(node)][1]

    def form(self, t: int) -> tuple:
        """The linear form of ``t`` (memoized)."""
        f = self.forms[t]
        if f is not None:
            return f
        d = self.defs[t]
        op = d[0]
        if op == "r":
            f = ((d[1], d[2], _EPS),)
        elif op == "l":
            data = d[1]
            f = ((data[0], data[0], self._literal(data[1:])),)
        elif op == "s":
            a, b = d[1], d[2]
            f = tuple((lo, hi, self.seq(x, b)) for lo, hi, x in self.form(a))
            if self.nullable[a]:
                f += self.form(b)
        elif op == "a":
            f = tuple(item for option in d[1] for item in self.form(option))
        elif op == "k":
            x, lo, hi = d[1], d[2], d[3]
            rest = self.rep(x, max(lo - 1, 0), None if hi is None else hi - 1)
            f = tuple((a, b, self.seq(y, rest)) for a, b, y in self.form(x))
        elif op == "n":
            f = self.form(self._level(d[1]))
        elif op == "u":
            f = self._utf8_form(d[1])
        else:  # "x"
            product, left, right = d[1], d[2], d[3]
            f = tuple(
                (lo, hi, t2)
                for lo, hi, left2, right2 in self._product_steps(product, left, right)
                if (t2 := self.product(product, left2, right2)) is not None
            )
        self.forms[t] = f
        return f

    # -- from the regex AST

    def of_node(self, node: rx.Node) -> int | None:
        """The term of ``node``'s UTF-8 strings (``None``: none): an ``Alt``
        as one ``("n", node)`` term (taken apart when its form is first
        asked for), anything else as its terms down to the alternations."""
        if isinstance(node, rx.Seq | rx.Alt | rx.Repeat):
            if rx.is_void(node):
                return None
            if isinstance(node, rx.Alt) and not rx.has_lookaround(node):
                # (with a lookaround inside, only taking it apart tells
                # whether it has a string: it is, at once)
                return self._make(("n", node), rx.nullable(node))
            # a sequence or repetition is its own level at once, so the same
            # remainder is one term however it is reached (what is left of
            # a sequence, of a repetition after one more round)
            return self._level(node)
        if isinstance(node, rx.Empty):
            return _EPS
        t = self.leaves.get(node, -1)
        if t != -1:
            return t
        if isinstance(node, rx.Intersect | rx.Difference):
            t = self._product_of(node)
        elif isinstance(node, rx.Literal):
            t = self._literal(node.text.encode())
        elif isinstance(node, rx.CharSet):
            sequences = tuple(utf8_sequences(node))
            t = self._make(("u", sequences), False) if sequences else None
        else:
            raise TypeError(f"not a regex AST node: {node!r}")
        self.leaves[node] = t
        return t

    def _level(self, node: rx.Seq | rx.Alt | rx.Repeat) -> int | None:
        """A composite node (not void) as the terms of its own level
        (``None`` only where a lookaround inside leaves no string)."""
        if isinstance(node, rx.Seq):
            t: int | None = self._sequence([self.of_node(part) for part in node.parts])
        elif isinstance(node, rx.Alt):
            options = {self.of_node(option) for option in node.options}
            options.discard(None)
            t = self.alt(options)
        else:
            t = self.rep(self.of_node(node.node), node.min, node.max)
        assert t is not None or rx.has_lookaround(node), "a node that is not void has a term"
        return t

    def _utf8_form(self, sequences: tuple) -> tuple:
        """The linear form of ``("u", sequences)``: one item per distinct
        leading range (a Unicode class: ``\\d`` is 62 UTF-8 sequences,
        ``\\w`` 886, under a few dozen lead ranges), the sequences' rests
        behind it a term of the same kind, taken apart when reached."""
        rests: dict[tuple[int, int], list] = {}
        for sq in sequences:
            rests.setdefault(sq[0], []).append(sq[1:])
        form = []
        for (lo, hi), after in rests.items():
            # (a lead byte fixes the encoding's length: all rests or none are empty)
            if not after[0]:
                form.append((lo, hi, _EPS))
            elif len(after) == 1:
                form.append((lo, hi, self._sequence([self.byte_range(*r) for r in after[0]])))
            else:
                form.append((lo, hi, self._make(("u", tuple(after)), False)))
        return tuple(form)

    def _literal(self, data: bytes) -> int:
        """The term of exactly ``data``: a byte, or ``("l", data)``, whose
        rest after its first byte is made when a walk reads that byte."""
        if not data:
            return _EPS
        if len(data) == 1:
            return self.byte_range(data[0], data[0])
        return self._make(("l", data), False)

    def _sequence(self, parts: list[int | None]) -> int | None:
        t: int | None = _EPS
        for part in reversed(parts):
            t = self.seq(part, t)
        return t

    # -- intersections and differences (lookarounds), as products

    def _product_of(self, node: rx.Intersect | rx.Difference) -> int | None:
        """An ``Intersect``/``Difference`` node as a product term (``None``
        when no string is in it)."""
        op = "and" if isinstance(node, rx.Intersect) else "minus"
        left = self.of_node(node.left)
        if left is None:
            return None
        right = self.of_node(node.right)
        return self.product(op, self._members(left), self._members(right))

    def _members(self, t: int | None) -> frozenset[int]:
        """``t``'s options (an alternation's), as a set (empty for ``None``)."""
        if t is None:
            return frozenset()
        d = self.defs[t]
        return frozenset(d[1]) if d[0] == "a" else frozenset((t,))

    def product(self, op: str, left: frozenset[int], right: frozenset[int]) -> int | None:
        """The term of the strings of any of ``left`` that are (``op``
        ``"and"``) or are not (``"minus"``) strings of any of ``right``;
        ``None`` when there is none (found by a search of the product,
        ``_has_string``: every term has some string)."""
        if not left:
            return None
        side = self._one_side(op, left, right)
        if side is not None:
            return self.alt(set(side))  # (None for the empty set)
        key = ("x", op, left, right)
        t = self.ids.get(key)
        if t is not None:
            return t
        if key not in self._live_products and (
            key in self._void_products
            or not (self._witnessed(op, left, right) or self._has_string(key))
        ):
            return None
        return self._make(key, self._product_accepts(op, left, right))

    def _witnessed(self, op: str, left: frozenset[int], right: frozenset[int]) -> bool:
        """Whether a product has a string, shown without searching it: the
        shortest known string of a left term (``_witness``) read by the right
        side is accepted there (``"and"``) or not (``"minus"``); for
        ``"and"``, also a right term's read by the left side. ``False`` only
        means not shown (the search decides). A length bound beside a
        format or a pattern (``.{0,n}``) is a product whose counts all
        differ: searching each cost more than the rest of its state."""
        sides = ((left, right), (right, left)) if op == "and" else ((left, right),)
        for mine, other in sides:
            best: bytes | None = None
            for t in mine:
                w = self._witness(t)
                if w is not None and (best is None or len(w) < len(best)):
                    best = w
            if best is not None and self._accepts(other, best) == (op == "and"):
                return True
        return False

    def _accepts(self, terms: frozenset[int], data: bytes) -> bool:
        """Whether ``data`` is a string of one of ``terms``."""
        form = self.form
        at: set[int] | frozenset[int] = terms
        for b in data:
            at = {u for t in at for lo, hi, u in form(t) if lo <= b <= hi}
            if not at:
                return False
        return any(self.nullable[t] for t in at)

    def _witness(self, t: int) -> bytes | None:
        """A short string of ``t`` (its shortest, where the AST shows it),
        ``None`` where none is known without a search (a product, an
        alternation's AST with an intersection or difference inside, a
        string past a few hundred bytes); memoized."""
        if t in self._witnesses:
            return self._witnesses[t]
        d = self.defs[t]
        op = d[0]
        w: bytes | None
        if op == "e":
            w = b""
        elif op == "r":
            w = bytes((d[1],))
        elif op == "l":
            w = d[1]
        elif op == "u":
            w = bytes(lo for lo, _hi in min(d[1], key=len))
        elif op == "s":
            a, b = self._witness(d[1]), self._witness(d[2])
            w = None if a is None or b is None else a + b
        elif op == "a":
            known_ones = [x for u in d[1] if (x := self._witness(u)) is not None]
            w = min(known_ones, key=len) if known_ones else None
        elif op == "k":  # (x{m,n}: m copies of x's)
            x = self._witness(d[1]) if d[2] else b""
            short = x is not None and len(x) * d[2] <= _WITNESS_BYTES
            w = x * d[2] if short and (d[3] is None or d[3] >= d[2]) else None
        elif op == "n":
            try:
                w = _ast_witness(d[1])
            except RecursionError:
                w = None
        else:  # "x": a product's strings are found by its search
            w = None
        if w is not None and len(w) > _WITNESS_BYTES:
            w = None
        self._witnesses[t] = w
        return w

    @staticmethod
    def _one_side(op: str, left: frozenset[int], right: frozenset[int]) -> frozenset[int] | None:
        """A product that one side decides alone (its term sets are of live
        terms): the terms it equals (empty: no string), else ``None``."""
        if op == "minus":
            if not right:
                return left
            if left <= right:
                return frozenset()
        else:
            if not right:
                return frozenset()
            if left <= right:
                return left
            if right <= left:
                return right
        return None

    def _product_accepts(self, op: str, left: frozenset[int], right: frozenset[int]) -> bool:
        """Whether the empty string is in the product."""
        nullable = self.nullable
        in_right = any(nullable[u] for u in right)
        return any(nullable[u] for u in left) and (in_right if op == "and" else not in_right)

    def _product_steps(
        self, op: str, left: frozenset[int], right: frozenset[int]
    ) -> list[tuple[int, int, frozenset[int], frozenset[int]]]:
        """``(lo, hi, left', right')``: the two sides' continuations after
        a byte in ``lo..hi``, for each piece of the byte line where the
        left side goes on (and, for ``"and"``, the right side too)."""
        form = self.form
        items = [(lo, hi, (0, u)) for t in left for lo, hi, u in form(t)]
        items += [(lo, hi, (1, u)) for t in right for lo, hi, u in form(t)]
        steps = []
        for lo, hi, targets in byte_segments(items):
            left2 = frozenset(u for side, u in targets if not side)
            right2 = frozenset(u for side, u in targets if side)
            if left2 and (right2 or op == "minus"):
                steps.append((lo, hi, left2, right2))
        return steps

    def _has_string(self, key: tuple) -> bool:
        """Whether the product ``key`` (``("x", op, left, right)``) has a
        string: a best-first search of the products it leads to, fewest
        bytes still needed first (``_min_length``: a count still to go, a
        closing quote), until one accepts or is known to have a string
        (then so do those on the way to it), or none is left (then none of
        those met has one). Best first: a counted repetition is not walked
        a count at a time, nor a suffix of fixed length a string at a time.
        ``CompileLimitExceeded`` past ``PRODUCT_SEARCH_BOUND`` products."""
        op = key[1]
        needs = self._product_min_length
        live, void, ids = self._live_products, self._void_products, self.ids
        parent: dict[tuple, tuple | None] = {key: None}
        heap = [(needs(op, key[2], key[3]), 0, key)]
        found: tuple | None = None
        while heap and found is None:
            if len(parent) > PRODUCT_SEARCH_BOUND:
                raise CompileLimitExceeded(
                    "states",
                    PRODUCT_SEARCH_BOUND,
                    len(parent),
                    "deciding whether an intersection or difference (a lookaround) has a string",
                )
            checkpoint()
            at = heapq.heappop(heap)[2]
            _, _, left, right = at
            if self._product_accepts(op, left, right):
                found = at
                break
            for _lo, _hi, left2, right2 in self._product_steps(op, left, right):
                side = self._one_side(op, left2, right2)
                if side is not None:
                    if side:  # (a side's terms alone: they have strings)
                        found = at
                        break
                    continue
                after = ("x", op, left2, right2)
                if after in ids or after in live:
                    found = at
                    break
                if after not in parent and after not in void:
                    parent[after] = at
                    heapq.heappush(heap, (needs(op, left2, right2), len(parent), after))
        if found is None:
            void.update(parent)
            return False
        while found is not None:
            live.add(found)
            found = parent[found]
        return True

    def _product_min_length(self, op: str, left: frozenset[int], right: frozenset[int]) -> int:
        """Bytes a product's strings have at least (a lower bound)."""
        least = self._min_length
        n = min(least(t) for t in left)
        return max(n, min(least(t) for t in right)) if op == "and" and right else n

    def _min_length(self, t: int) -> int:
        """Bytes ``t``'s strings have at least (exact but for products and
        alternations not taken apart, where a lower bound), memoized."""
        known = self._least.get(t)
        if known is not None:
            return known
        d = self.defs[t]
        op = d[0]
        if op == "s":  # (a right-nested chain: its heads, then its last term)
            n, u = 0, t
            while self.defs[u][0] == "s":
                n += self._min_length(self.defs[u][1])
                u = self.defs[u][2]
            n += self._min_length(u)
        elif op == "a":
            n = min(self._min_length(u) for u in d[1])
        elif op == "k":
            n = d[2] * self._min_length(d[1])
        elif op == "x":
            n = self._product_min_length(d[1], d[2], d[3])
        elif op == "l":
            n = len(d[1])
        elif op == "u":
            n = min(len(sq) for sq in d[1])
        else:  # "e": 0, "r": 1, "n": at least 0 (not taken apart for this)
            n = 1 if op == "r" else 0
        self._least[t] = n
        return n


#: the longest string ``TermTable._witness`` keeps (longer: not known)
_WITNESS_BYTES = 256


def _ast_witness(node: rx.Node, memo: dict[int, bytes | None] | None = None) -> bytes | None:
    """The shortest UTF-8 string of ``node`` (its options' shortest, a
    class's lowest scalar), ``None`` when it has none, holds an intersection
    or difference (not decided without a search) or is past
    ``_WITNESS_BYTES``. A subtree shared by many parts is read once."""
    if memo is None:
        memo = {}
    key = id(node)
    if key in memo:
        return memo[key]
    kind = type(node)
    w: bytes | None
    if kind is rx.Literal:
        w = node.text.encode("utf-8", "surrogatepass")
    elif kind is rx.CharSet:
        sequences = utf8_sequences(node)  # (in code-point order: the shortest first)
        w = bytes(lo for lo, _hi in sequences[0]) if sequences else None
    elif kind is rx.Empty:
        w = b""
    elif kind is rx.Seq:
        w = b""
        for part in node.parts:
            x = _ast_witness(part, memo)
            if x is None or len(w) + len(x) > _WITNESS_BYTES:
                w = None
                break
            w += x
    elif kind is rx.Alt:
        known = [x for o in node.options if (x := _ast_witness(o, memo)) is not None]
        w = min(known, key=len) if known else None
    elif kind is rx.Repeat:
        x = b"" if node.min == 0 else _ast_witness(node.node, memo)
        w = None if x is None or len(x) * node.min > _WITNESS_BYTES else x * node.min
    else:  # Intersect, Difference
        w = None
    if w is not None and len(w) > _WITNESS_BYTES:
        w = None
    memo[key] = w
    return w


#: a composite node's kind in its digest
_NODE_TAGS = {
    rx.Seq: b"S",
    rx.Alt: b"A",
    rx.Repeat: b"R",
    rx.Empty: b"E",
    rx.Intersect: b"I",
    rx.Difference: b"D",
}


def _node_parts(node: rx.Node) -> tuple[rx.Node, ...]:
    """The sub-ASTs of ``node`` (``TypeError`` for a kind of node it does not know)."""
    if isinstance(node, (rx.CharSet, rx.Literal, rx.Empty)):
        return ()
    if isinstance(node, rx.Seq):
        return node.parts
    if isinstance(node, rx.Alt):
        return node.options
    if isinstance(node, rx.Repeat):
        return (node.node,)
    if isinstance(node, (rx.Intersect, rx.Difference)):
        return (node.left, node.right)
    raise TypeError(f"not a regex AST node: {type(node).__name__}")


class _Rows(dict):
    """``rows[state]``: the state's 256 successors (``-1``: dead), made from
    its runs (found first if need be) on first read: a walk that reads runs
    only (the subterminal trees') never pays for the 256 entries."""

    __slots__ = ("_dfa",)

    def __init__(self, dfa: LazyDFA):
        super().__init__()
        # a weak reference: no cycle, so an automaton nobody holds is freed
        # at once, not by a later collection of the whole heap
        self._dfa = weakref.ref(dfa)

    def __missing__(self, state: int) -> tuple[int, ...]:
        dfa = self._dfa()
        if dfa is None:
            raise ReferenceError("the automaton of these rows is gone")
        row = [-1] * 256
        for lo, hi, target in dfa.runs_of(state):
            row[lo : hi + 1] = [target] * (hi + 1 - lo)
        # a tuple of ints: the collector stops tracking it, so the rows of a
        # large automaton do not slow every full collection. (Two threads
        # may make it at once: the same tuple, set twice.)
        frozen = tuple(row)
        dict.__setitem__(self, state, frozen)
        return frozen


class LazyDFA(Walking):
    """The DFA of a regex AST, its states found as they are asked for.

    ``start`` (``-1`` for the empty language), ``rows[q][byte]`` (computed
    on first read), ``accept[q]`` (known for every state found so far: a
    state is found as the successor in some row before anyone can ask
    whether it accepts), ``num_states`` (found so far); ``run``,
    ``matches``, ``is_viable`` as on a ``ByteDFA``. ``without_empty``
    drops the empty string from the language (the start state is then a
    state of its own, never accepting); ``nullable`` says whether the
    regex's own language has it. ``shortest`` keeps only the strings no
    proper prefix of which is in the language (an accepting state has no
    transitions: ``ByteDFA.shortest``'s language, applied before
    ``without_empty``). ``CompileLimitExceeded`` when more
    than ``max_states`` states are found, or the regex's terms pass the
    NFA bound, or its AST nests too deeply to take apart (whenever that
    happens: at construction or in the walk that finds it).
    """

    def __init__(
        self,
        node: rx.Node,
        *,
        max_states: int = DEFAULT_MAX_STATES,
        without_empty: bool = False,
        shortest: bool = False,
        terms: TermTable | None = None,
    ):
        self.max_states = max_states
        self.shortest = shortest
        if terms is None:
            terms = TermTable()
        self._terms = terms
        self._lock = terms.lock  # (a walk of any automaton sharing the table makes terms)
        with terms.lock:
            terms.limit += nfa_limit(max_states)  # each automaton brings its own bound
            try:
                term = terms.of_node(node)
            except RecursionError:
                raise CompileLimitExceeded(
                    "nesting", 0, None, "the regex AST is nested too deeply"
                ) from None
        # a state's terms as a sorted tuple of ids: tuples of ints are not
        # tracked by the garbage collector, which every full collection
        # would otherwise walk (tens of thousands on a large schema)
        self._ids: dict[tuple[int, ...], int] = {}
        self._relaxed: dict[tuple[int, int], int] = {}  # relaxed()'s memo
        self._sets: list[tuple[int, ...]] = []
        self.accept: list[bool] = []
        self.rows: dict[int, tuple[int, ...]] = _Rows(self)
        #: ``runs[q]``: the transitions of a state found already as ``(lo,
        #: hi, target)`` byte ranges (``target >= 0``; dead where none covers)
        self.runs: dict[int, tuple[tuple[int, int, int], ...]] = {}
        first = () if term is None else (term,)
        self.nullable = term is not None and terms.nullable[term]
        if without_empty:
            # a start state of its own: the same terms met later accept
            self._sets.append(first)
            self.accept.append(False)
            with terms.lock:
                # (shortest: with the empty string in it, the language is just that)
                empty = term is None or (shortest and self.nullable) or not terms.form(term)
        else:
            self._add(first)
            empty = term is None
        self.start = -1 if empty else 0

    # -- the language

    @property
    def num_states(self) -> int:
        """States found so far."""
        return len(self._sets) if self.start >= 0 else 0

    def is_empty(self) -> bool:
        """Whether the language has no string."""
        return self.start < 0

    def accepts_empty(self) -> bool:
        """Whether the language has the empty string."""
        return self.start >= 0 and self.accept[self.start]

    def complete(self) -> LazyDFA:
        """Find every state (``CompileLimitExceeded`` past ``max_states``)."""
        q = 0
        while self.start >= 0 and q < len(self._sets):
            self.runs_of(q)
            q += 1
        return self

    def to_dfa(self) -> ByteDFA:
        """The whole automaton as a (trimmed, not minimized) ``ByteDFA``."""
        if self.start < 0:
            return ByteDFA.empty()
        self.complete()
        table = np.array([self.rows[q] for q in range(len(self._sets))], dtype=np.int32)
        return ByteDFA(table, np.array(self.accept, dtype=bool), self.start)

    # -- the construction

    def _add(self, terms: tuple[int, ...]) -> int:
        j = len(self._sets)
        if j >= self.max_states:
            raise _states_exceeded(self.max_states, j + 1, "the lazily built automaton")
        self._ids[terms] = j
        self._sets.append(terms)
        nullable = self._terms.nullable
        self.accept.append(any(nullable[t] for t in terms))
        return j

    def _expand(self, state: int) -> tuple[tuple[int, int, int], ...]:
        """Find ``state``'s runs (and the states they lead to)."""
        with self._lock:
            runs = self.runs.get(state)
            if runs is not None:  # (another thread found them first)
                return runs
            if not 0 <= state < len(self._sets):
                raise IndexError(f"no state {state} found yet")
            checkpoint()
            if self.shortest and self.accept[state]:
                runs = self.runs[state] = ()
                return runs
            form = self._terms.form
            try:
                items = [item for t in self._sets[state] for item in form(t)]
            except RecursionError:  # (an alternation nested too deeply, taken apart now)
                raise CompileLimitExceeded(
                    "nesting", 0, None, "the regex AST is nested too deeply"
                ) from None
            found = []
            ids = self._ids
            for lo, hi, targets in byte_segments(items):
                key = tuple(sorted(targets))
                j = ids.get(key)
                if j is None:
                    j = self._add(key)
                found.append((lo, hi, j))
            runs = self.runs[state] = tuple(found)
            return runs

    def runs_of(self, state: int) -> tuple[tuple[int, int, int], ...]:
        """``state``'s transitions as ``(lo, hi, target)`` byte ranges
        (found first if need be): what ``rows[state]`` holds, in the few
        pieces a walk can step without reading 256 entries."""
        runs = self.runs.get(state)
        if runs is None:
            runs = self._expand(state)
        return runs

    def relaxed(self, state: int, width: int) -> int:
        """A state that reads every string of at most ``width`` bytes as
        ``state`` does (accepting after the same prefixes, dead after the
        same ones), with the counts that ``width`` bytes cannot exhaust
        lifted (:meth:`TermTable.relaxed`): the states inside a long
        counted string, one per count, are then one state, which every
        plain character leaves as it is. ``state`` itself where nothing
        changes, and in a ``shortest`` automaton (whose strings depend on
        what lies beyond). The state is found like any other (it counts
        against ``max_states``); memoized."""
        if self.shortest:
            return state
        key = (state, width)
        found = self._relaxed.get(key)
        if found is not None:
            return found
        with self._lock:
            terms = self._sets[state]
            relax = self._terms.relaxed
            relaxed = tuple(sorted({relax(t, width) for t in terms}))
            found = state
            nullable = self._terms.nullable
            # (a start state made apart from the empty string keeps its own)
            if relaxed != terms and self.accept[state] == any(nullable[t] for t in relaxed):
                found = self._ids.get(relaxed)
                if found is None:
                    found = self._add(relaxed)
            self._relaxed[key] = found
        return found

    def state_digest(self, state: int) -> bytes:
        """A digest of what ``state`` reads: its terms' digests
        (:meth:`TermTable.digest`), whether it accepts, and ``shortest``:
        the same in any process for a state with the same terms (a key for
        what is stored on disk; a state found with other terms of the same
        language has another digest, which costs a miss, never a wrong
        hit)."""
        with self._lock:
            digest = self._terms.digest
            terms = b"".join(sorted(digest(t) for t in self._sets[state]))
        flags = bytes((self.accept[state], self.shortest))
        return hashlib.blake2b(terms + flags, digest_size=16).digest()

    @property
    def nfa_states(self) -> int:
        """The terms made so far (what an NFA's states are to a subset
        construction)."""
        return len(self._terms.defs)

    def __repr__(self) -> str:
        return f"LazyDFA(states found={self.num_states}, start={self.start})"


def has_string(node: rx.Node, *, max_states: int = DEFAULT_MAX_STATES) -> bool:
    """Whether the AST's language has a string, decided on a fresh table's
    terms: an intersection or difference (``Intersect``/``Difference``, as
    "do these two languages meet?" asks) is searched as a product for a
    string, fewest bytes first, and stops at the first it finds, never
    determinizing either side whole (two branches of a ``oneOf`` of
    objects: 0.4 ms where their minimal automata took 240 ms).
    ``CompileLimitExceeded`` past ``nfa_limit(max_states)`` terms or
    ``PRODUCT_SEARCH_BOUND`` products."""
    terms = TermTable()
    terms.limit = nfa_limit(max_states)
    return terms.of_node(node) is not None


def regex_automaton(
    pattern: str,
    *,
    max_states: int = DEFAULT_MAX_STATES,
    node: rx.Node | None = None,
    terms: TermTable | None = None,
    shortest: bool = False,
) -> ByteDFA | LazyDFA:
    """The automaton of ``re.fullmatch(pattern, text)`` for a walk that
    visits few of its states: the minimal ``ByteDFA`` when one was built
    already (``ByteDFA.from_regex``'s cache), else a ``LazyDFA``.
    ``node``: ``pattern``'s AST if the caller has it; ``terms``: the table
    of the grammar the automaton is a terminal of (``terminal_dfas``): the
    automaton is made on it and not kept, so the grammar's terminals take
    the pieces they share (a JSON string, an object's remaining members)
    apart once, and no cache holds a grammar's table. Without ``terms``,
    the automaton has a table of its own and is kept by pattern when the
    pattern is short (the core cache ``"lazy regex automata"``, with the
    states walks found in it). ``shortest``: the shortest matches only
    (``LazyDFA``'s ``shortest``: a lexer's reading of an all-lazy regex),
    always a ``LazyDFA``."""
    key: tuple = (pattern, max_states, False)
    if not shortest:
        dfa = _REGEX_AUTOMATA.get(key)
        if dfa is not None:
            return dfa
    else:
        key = (pattern, max_states, "shortest")
    if terms is not None:
        node = node if node is not None else rx.parse_regex(pattern)
        return LazyDFA(node, max_states=max_states, shortest=shortest, terms=terms)
    lazy = _LAZY.get(key)
    if lazy is None:
        node = node if node is not None else rx.parse_regex(pattern)
        lazy = LazyDFA(node, max_states=max_states, shortest=shortest)
        if len(pattern) <= _SHARED_PATTERN_CHARS:
            _LAZY.put(key, lazy)
    return lazy


#: ``regex_automaton`` keeps the lazy automata (made without a grammar's
#: table) of patterns up to this many characters.
_SHARED_PATTERN_CHARS = 4096

#: ``regex_automaton``'s lazy automata made without a grammar's table, by
#: (pattern, max_states, shortest?): at most 32, of patterns up to
#: ``_SHARED_PATTERN_CHARS`` (a term or two per character once walks have
#: taken them apart, and the states the walks found). Few: each
#: automaton's terms are objects every full collection of the garbage
#: collector walks (128 of them, after 100 MaskBench schemas, made each
#: one 3.4 ms longer).
_LAZY: ContentCache[LazyDFA] = core_cache(
    "lazy regex automata",
    ContentCache(32),
)
