"""A byte-level Earley recognizer that decides prefix viability for any CFG.

Scannerless: terminals are byte DFAs run inside the chart, so a token may end
in the middle of a terminal, span several terminals, or end inside a UTF-8
character. Ambiguity, left recursion and nullable rules are handled (nullable
non-terminals with the Aycock–Horspool prediction fix). The grammar is
reduced first (non-productive rules dropped), so a column is viable — its
text is a prefix of a sentence — iff it is not dead.

A *column* is the chart at one byte position. Columns are immutable and
interned by their kernel (the items that arrive by scanning a byte), so two
texts that leave the parser in the same configuration share one column, and
``column.memo[byte]`` caches the step: walking the vocabulary trie mostly
hits that cache instead of running Earley again.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable

from constrain_api import ByteDFA, GrammarIR

_IGNORE = -1  # rule index of an %ignore scan


class Column:
    """The Earley chart at one position (see the module docstring)."""

    __slots__ = ("__weakref__", "accepting", "boundary", "memo", "scans", "waiting")

    def __init__(self) -> None:
        self.waiting: dict[int, list[tuple]] = {}  # nonterminal -> items (rule, dot, origin)
        self.scans: list[tuple] = []  # (rule, dot, origin, terminal, dfa_state)
        self.boundary: tuple = ()  # items that may be preceded by an %ignore token here
        self.accepting = False
        self.memo: dict[int, Column | None] = {}


class EarleyRecognizer:
    """Prefix recognizer for one grammar; ``start`` is the column of the empty text.

    ``step(column, byte)`` returns the next column or ``None`` when no sentence
    has that prefix. ``max_columns`` bounds the memo (``CompileLimitExceeded``
    is never raised for it: the memo is cleared and rebuilt instead).
    ``lazy``: the terminals' automata find their states as the chart reaches
    them (``LazyDFA``) instead of being determinized and minimized whole
    first: the same language, for a grammar whose terminals are too big to
    build whole but only a few of whose states a text visits.
    """

    def __init__(
        self,
        ir: GrammarIR,
        *,
        max_states: int = 100_000,
        max_columns: int = 2_000_000,
        lazy: bool = False,
    ):
        self.max_columns = max_columns
        self._columns_made = 0
        self._interned: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        term_names = list(ir.terminals)
        term_index = {name: i for i, name in enumerate(term_names)}
        automata = ir.terminal_dfas(max_states=max_states, lazy=lazy)
        dfas = [automata[name] for name in term_names]
        self.terminal_names = term_names
        self._automata = dfas  # (a lazy automaton's rows refer to it weakly)
        self._rows = [d.rows for d in dfas]
        self._accept = [d.accept for d in dfas]
        self._dfa_start = [d.start for d in dfas]
        empty_term = {i for i, d in enumerate(dfas) if d.is_empty()}

        rules = [(r.lhs, r.rhs) for r in ir.rules]
        productive = _productive(rules, ir.terminals, {term_names[i] for i in empty_term})
        rules = [
            (lhs, rhs)
            for lhs, rhs in rules
            if all(
                s in productive or (s in ir.terminals and term_index[s] not in empty_term)
                for s in rhs
            )
        ]
        nts = [ir.start, *sorted({lhs for lhs, _ in rules} - {ir.start})]
        nt_index = {name: i for i, name in enumerate(nts)}
        self.start_symbol = ir.start

        def code(sym: str) -> int:
            return ~term_index[sym] if sym in term_index else nt_index[sym]

        # Rule 0 is the augmented start S' -> S.
        self._lhs = [-1] + [nt_index[lhs] for lhs, _ in rules]
        self._rhs = [(0,)] + [tuple(code(s) for s in rhs) for _, rhs in rules]
        self._by_lhs: list[list[int]] = [[] for _ in nts]
        for r in range(1, len(self._rhs)):
            self._by_lhs[self._lhs[r]].append(r)
        self._nullable = _nullable_nts(self._lhs, self._rhs, dfas, len(nts))
        self._term_nullable = [d.accepts_empty() for d in dfas]
        self._ignore = [
            term_index[name]
            for name in ir.ignore
            if name in term_index and term_index[name] not in empty_term
        ]
        self.empty_language = ir.start not in productive
        self.start = self._build([(0, 0, None)], [])

    # -- chart construction ---------------------------------------------------------
    def _build(self, kernel_items: Iterable[tuple], kernel_scans: list[tuple]) -> Column:
        col = Column()
        lhs_of, rhs_of, by_lhs = self._lhs, self._rhs, self._by_lhs
        nullable, term_nullable, dfa_start = self._nullable, self._term_nullable, self._dfa_start
        waiting = col.waiting
        scans = list(kernel_scans)
        boundary = []
        seen = set()
        predicted = set()
        agenda = [(r, d, col if o is None else o) for r, d, o in kernel_items]
        while agenda:
            item = agenda.pop()
            if item in seen:
                continue
            seen.add(item)
            r, dot, origin = item
            rhs = rhs_of[r]
            if dot == len(rhs):
                if r == 0:
                    col.accepting = True
                    boundary.append(item)
                elif origin is not col:  # empty derivations are covered at prediction
                    lhs = lhs_of[r]
                    for r2, d2, o2 in origin.waiting.get(lhs, ()):
                        agenda.append((r2, d2 + 1, o2))
                continue
            sym = rhs[dot]
            if sym >= 0:
                waiting.setdefault(sym, []).append(item)
                if sym not in predicted:
                    predicted.add(sym)
                    agenda.extend((r2, 0, col) for r2 in by_lhs[sym])
                if nullable[sym]:
                    agenda.append((r, dot + 1, origin))
            else:
                t = ~sym
                if dfa_start[t] >= 0:
                    scans.append((r, dot, origin, t, dfa_start[t]))
                boundary.append(item)
                if term_nullable[t]:
                    agenda.append((r, dot + 1, origin))
        if boundary and self._ignore:
            scans.extend((_IGNORE, 0, col, t, dfa_start[t]) for t in self._ignore)
        col.scans = scans
        col.boundary = tuple(boundary)
        return col

    def step(self, col: Column, byte: int) -> Column | None:
        """The column after ``byte``, or ``None`` if the text stops being viable."""
        memo = col.memo
        if byte in memo:
            return memo[byte]
        rows, accept = self._rows, self._accept
        items = []
        scans = []
        for scan in col.scans:
            r, dot, origin, t, state = scan
            nxt = rows[t][state][byte]
            if nxt < 0:
                continue
            scans.append((r, dot, origin, t, nxt))
            if accept[t][nxt]:
                if r == _IGNORE:
                    items.extend(origin.boundary)
                else:
                    items.append((r, dot + 1, origin))
        if not scans:
            memo[byte] = None
            return None
        key = (frozenset(items), frozenset(scans))
        nxt_col = self._interned.get(key)
        if nxt_col is None:
            nxt_col = self._build(items, scans)
            self._interned[key] = nxt_col
            self._columns_made += 1
            if self._columns_made > self.max_columns:
                self._forget()
        memo[byte] = nxt_col
        return nxt_col

    def _forget(self) -> None:
        """Drop every memo, so columns no checker holds can be collected."""
        for column in list(self._interned.values()):
            column.memo.clear()
        self._columns_made = 0

    def run(self, data: bytes, col: Column | None = None) -> Column | None:
        """The column after ``data`` from ``col`` (default: the start)."""
        col = self.start if col is None else col
        for byte in data:
            col = self.step(col, byte)
            if col is None:
                return None
        return col

    def accepts(self, data: bytes) -> bool:
        """Whether ``data`` is a sentence of the grammar."""
        col = self.run(data)
        return col is not None and col.accepting


def _productive(rules: list[tuple[str, tuple[str, ...]]], terminals, empty_terms) -> set[str]:
    """Non-terminals that derive at least one string."""
    productive: set[str] = set()
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            if lhs in productive:
                continue
            if all((s in terminals and s not in empty_terms) or s in productive for s in rhs):
                productive.add(lhs)
                changed = True
    return productive


def _nullable_nts(lhs_of, rhs_of, dfas: list[ByteDFA], count: int) -> list[bool]:
    """Which non-terminals derive the empty string (terminals whose regex accepts "" count)."""
    nullable = [False] * count
    changed = True
    while changed:
        changed = False
        for r in range(1, len(rhs_of)):
            if nullable[lhs_of[r]]:
                continue
            if all(
                (s >= 0 and nullable[s]) or (s < 0 and dfas[~s].accepts_empty()) for s in rhs_of[r]
            ):
                nullable[lhs_of[r]] = True
                changed = True
    return nullable
