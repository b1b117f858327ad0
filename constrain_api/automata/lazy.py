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
keeps its counts, ``Intersect``/``Difference`` embed their minimal
automaton). Terms are interned by structure, so two ways of reaching the
same remainder are one term: the copies of a shared continuation that a
Thompson NFA keeps apart (an object's remaining members after each optional
one) are one state here, as in the minimal DFA. Every term has some string
(void pieces are dropped as terms are made), so every state found is live
and ``-1`` means dead, as in a ``ByteDFA``. Not minimized otherwise.

The regex itself is taken apart as lazily: an alternation of the AST is
one term until a state's row first needs its first bytes, and then only
its options are made terms, down to their own alternations. A schema's
terminal (an object's body: members, optional members, values, each an
alternation) costs little to make; a walk pays for the parts it reaches.

Thread-safe: states are found under a lock, and a row, once in ``rows``,
never changes.
"""

from __future__ import annotations

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

__all__ = ["LazyDFA", "TermTable", "regex_automaton"]

_EPS = 0  # the term of the empty string


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
    ``("a", ids)`` (any of),
    ``("k", x, m, n)`` (``x`` ``m`` to ``n`` times, ``None``: unbounded),
    ``("d", k, q)`` (state ``q`` of embedded automaton ``k``), ``("u",
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
        self.automata: list[ByteDFA] = []
        self.leaves: dict[rx.Node, int | None] = {}  # literal and class terms by node

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
        key = frozenset(flat)
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

    def automaton_state(self, k: int, q: int) -> int:
        return self._make(("d", k, q), bool(self.automata[k].accepting[q]))

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
        else:  # "d"
            k, q = d[1], d[2]
            f = tuple(
                (lo, hi, self.automaton_state(k, target))
                for lo, hi, target in self.automata[k].runs_of(q)
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
            if isinstance(node, rx.Alt):
                return self._make(("n", node), rx.nullable(node))
            # a sequence or repetition is its own level at once, so the same
            # remainder is one term however it is reached (what is left of
            # a sequence, of a repetition after one more round)
            return self._level(node)
        if isinstance(node, rx.Empty):
            return _EPS
        if isinstance(node, rx.Intersect | rx.Difference):
            return self._embedded(node)
        t = self.leaves.get(node, -1)
        if t != -1:
            return t
        if isinstance(node, rx.Literal):
            t = self._literal(node.text.encode())
        elif isinstance(node, rx.CharSet):
            sequences = tuple(utf8_sequences(node))
            t = self._make(("u", sequences), False) if sequences else None
        else:
            raise TypeError(f"not a regex AST node: {node!r}")
        self.leaves[node] = t
        return t

    def _level(self, node: rx.Seq | rx.Alt | rx.Repeat) -> int:
        """A composite node (not void) as the terms of its own level."""
        if isinstance(node, rx.Seq):
            parts = [self.of_node(part) for part in node.parts]  # (none void: the node is not)
            t: int | None = self._sequence(parts)  # type: ignore[arg-type]
        elif isinstance(node, rx.Alt):
            options = {self.of_node(option) for option in node.options}
            options.discard(None)
            t = self.alt(options)
        else:
            t = self.rep(self.of_node(node.node), node.min, node.max)
        assert t is not None, "a node that is not void has a term"
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

    def _sequence(self, parts: list[int]) -> int:
        t = _EPS
        for part in reversed(parts):
            t = self.seq(part, t)
        return t

    def _embedded(self, node: rx.Intersect | rx.Difference) -> int | None:
        """An ``Intersect``/``Difference`` node as its minimal automaton."""
        left = ByteDFA.from_node(node.left)
        right = ByteDFA.from_node(node.right)
        dfa = left.intersect(right) if isinstance(node, rx.Intersect) else left.difference(right)
        if dfa.is_empty():
            return None
        self.automata.append(dfa)
        return self.automaton_state(len(self.automata) - 1, dfa.start)


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
    regex's own language has it. ``CompileLimitExceeded`` when more
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
        terms: TermTable | None = None,
    ):
        self.max_states = max_states
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
        self._ids: dict[frozenset[int], int] = {}
        self._sets: list[frozenset[int]] = []
        self.accept: list[bool] = []
        self.rows: dict[int, tuple[int, ...]] = _Rows(self)
        #: ``runs[q]``: the transitions of a state found already as ``(lo,
        #: hi, target)`` byte ranges (``target >= 0``; dead where none covers)
        self.runs: dict[int, tuple[tuple[int, int, int], ...]] = {}
        first = frozenset() if term is None else frozenset((term,))
        self.nullable = term is not None and terms.nullable[term]
        if without_empty:
            # a start state of its own: the same terms met later accept
            self._sets.append(first)
            self.accept.append(False)
            with terms.lock:
                empty = term is None or not terms.form(term)
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

    def _add(self, terms: frozenset[int]) -> int:
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
            form = self._terms.form
            try:
                items = [item for t in self._sets[state] for item in form(t)]
            except RecursionError:  # (an alternation nested too deeply, taken apart now)
                raise CompileLimitExceeded(
                    "nesting", 0, None, "the regex AST is nested too deeply"
                ) from None
            found = []
            for lo, hi, targets in byte_segments(items):
                j = self._ids.get(targets)
                if j is None:
                    j = self._add(targets)
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

    @property
    def nfa_states(self) -> int:
        """The terms made so far (what an NFA's states are to a subset
        construction)."""
        return len(self._terms.defs)

    def __repr__(self) -> str:
        return f"LazyDFA(states found={self.num_states}, start={self.start})"


def regex_automaton(
    pattern: str,
    *,
    max_states: int = DEFAULT_MAX_STATES,
    node: rx.Node | None = None,
    terms: TermTable | None = None,
) -> ByteDFA | LazyDFA:
    """The automaton of ``re.fullmatch(pattern, text)`` for a walk that
    visits few of its states: the minimal ``ByteDFA`` when one was built
    already (``ByteDFA.from_regex``'s cache), else a ``LazyDFA``, kept by
    pattern when the pattern is short (the core cache ``"lazy regex
    automata"``: the terminals every schema shares, with the states walks
    found in them). ``node``: ``pattern``'s AST if the caller has it;
    ``terms``: the table a long pattern's automaton shares with its
    grammar's others (a short one, kept by the cache, has its own, so the
    cache holds no grammar's table)."""
    key = (pattern, max_states, False)
    dfa = _REGEX_AUTOMATA.get(key)
    if dfa is not None:
        return dfa
    lazy = _LAZY.get(key)
    if lazy is None:
        shared = len(pattern) <= _SHARED_PATTERN_CHARS
        node = node if node is not None else rx.parse_regex(pattern)
        lazy = LazyDFA(node, max_states=max_states, terms=None if shared else terms)
        if shared:
            _LAZY.put(key, lazy)
    return lazy


#: ``regex_automaton`` keeps the lazy automata of patterns up to this many
#: characters: the terminals schemas share are short (the JSON string,
#: number and literal pieces: under 100); a schema's own (an object's body)
#: are long, and built for that schema alone.
_SHARED_PATTERN_CHARS = 4096

#: ``regex_automaton``'s lazy automata by (pattern, max_states): at most 32,
#: of patterns up to ``_SHARED_PATTERN_CHARS`` (a term or two per character
#: once walks have taken them apart, and the states the walks found). Few:
#: the patterns schemas share (strings, numbers) are used by every schema
#: and stay; each automaton's terms are objects every full collection of
#: the garbage collector walks (128 of them, after 100 MaskBench schemas,
#: made each one 3.4 ms longer).
_LAZY: ContentCache[LazyDFA] = core_cache(
    "lazy regex automata",
    ContentCache(32),
)
