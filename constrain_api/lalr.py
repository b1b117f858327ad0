"""LALR(1) parse tables, built over integers (DeRemer and Pennello's lookaheads).

:func:`lalr_tables` takes a grammar as ``(lhs, rhs)`` rules over symbol
names and returns its actions: per LR state, per symbol, a shift (the next
state; for a non-terminal, its goto) or a reduction (``(lhs, len(rhs))``).
The construction is the one of lark's ``LALR_Analyzer`` (an LR(0)
automaton of the rules with ``$root → start`` added, then "Efficient
Computation of LALR(1) Look-Ahead Sets", DeRemer & Pennello 1982: *reads*,
*includes* and *lookback* relations closed by one digraph pass each). A
test holds the two to the same automaton and to the same tables on the
suite's grammars; lark also lets an item in mid-body add to *includes*, so
its lookaheads can be a superset (a reduction, or a conflict, that the
LALR(1) tables do not have), which ours are not. It is
written here because every grammar compile waits for it: lark's analyzer,
written for lark's own parser generation, spends 1 ms on the 30 rules of a
typical JSON schema's grammar (a fifth of its time to first mask) on rule
pointers, symbol objects and sets of them; items, states and symbols here
are small integers and terminal sets are int bitmasks, 4-40 times faster.
(No maintained PyPI package builds LALR tables in compiled code.)

Conflicts are never resolved: a shift/reduce or reduce/reduce conflict
raises :class:`NotLALR`, unless ``conflicts=True`` keeps them, every action of
a conflicted entry in :attr:`LALRTables.conflicts`, for a parser that
follows them all (``constrain_api.lr``'s general mode: a nondeterministic LR
parser, exact on any such grammar). Kept conflicts need a grammar without
*hidden left recursion* (``A → B A …`` with ``B`` deriving the empty
string), where that parser could reduce the empty ``B`` without end; such a
grammar raises :class:`NotLALR` all the same. A duplicated rule, or a symbol
that is neither a terminal nor the left side of a rule, always raises it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from .first_follow import deriving, digraph

__all__ = ["END", "LALRTables", "NotLALR", "lalr_tables"]

#: The end-of-input terminal (the lookahead after a whole sentence).
END = "$END"

#: An action: ``(True, state)`` shift (or goto), ``(False, (lhs, length))`` reduce.
Action = tuple[bool, object]


class NotLALR(Exception):
    """The grammar has no conflict-free LALR(1) tables (the message says where)."""


@dataclass(frozen=True, slots=True)
class LALRTables:
    """``actions[state][symbol]``; ``start`` the initial state; ``end`` the
    state reached by the start symbol from ``start`` (a whole sentence read);
    ``conflicts[state][terminal]``: every action of an entry with several
    (the shift first, then the reductions by rule order; ``actions`` holds
    the first of them), empty unless the tables were built with
    ``conflicts=True``."""

    actions: dict[int, dict[str, Action]]
    start: int
    end: int
    conflicts: dict[int, dict[str, tuple[Action, ...]]] = field(default_factory=dict)


def lalr_tables(
    rules: Sequence[tuple[str, Sequence[str]]],
    terminals: Collection[str],
    start: str,
    *,
    conflicts: bool = False,
) -> LALRTables:
    """The LALR(1) tables of ``rules`` from ``start`` (names in ``terminals``
    are terminals; every other name must be some rule's left side).
    States are numbered in breadth-first order from the start state (0).
    ``conflicts=True`` keeps conflicts instead of raising (module docstring)."""
    return _Builder(rules, terminals, start).tables(keep_conflicts=conflicts)


class _Builder:
    def __init__(self, rules, terminals, start):
        terminals = set(terminals)
        nonterminals: dict[str, int] = {}  # (id 0 is the added root, which no name reaches)
        for lhs, _ in rules:
            if lhs in terminals:
                raise NotLALR(f"terminal {lhs!r} is the left side of a rule")
            nonterminals.setdefault(lhs, len(nonterminals) + 1)
        if start not in nonterminals:
            raise NotLALR(f"no rule for the start symbol {start!r}")
        n = len(nonterminals) + 1
        names = ["$root", *nonterminals]
        term_ids: dict[str, int] = {}
        seen_rules = set()
        self.lhs: list[int] = [0]
        self.rhs: list[tuple[int, ...]] = [(nonterminals[start],)]
        for lhs, rhs in rules:
            ids = []
            for s in rhs:
                i = nonterminals.get(s)
                if i is None:
                    if s not in terminals:
                        raise NotLALR(f"symbol {s!r} is no terminal and no rule's left side")
                    i = term_ids.get(s)
                    if i is None:
                        i = term_ids[s] = n + len(term_ids)
                ids.append(i)
            rule = (nonterminals[lhs], tuple(ids))
            if rule in seen_rules:
                raise NotLALR(f"rule {lhs} -> {' '.join(rhs)} is given twice")
            seen_rules.add(rule)
            self.lhs.append(rule[0])
            self.rhs.append(rule[1])
        self.end_id = n + len(term_ids)
        term_ids[END] = self.end_id
        self.n = n
        self.names = names + list(term_ids)  # symbol id → name
        self.by_lhs: list[list[int]] = [[] for _ in range(n)]
        for r, a in enumerate(self.lhs):
            self.by_lhs[a].append(r)
        # items: (rule, dot) as base[rule] + dot
        self.base: list[int] = []
        self.item_next: list[int] = []  # the symbol after the dot, -1 at the end
        for rhs in self.rhs:
            self.base.append(len(self.item_next))
            self.item_next += [*rhs, -1]
        self.nullable = self._nullable()
        self.predict = self._predictions()

    def _nullable(self) -> list[bool]:
        empty = deriving(zip(self.lhs, self.rhs, strict=True), ())
        return [a in empty for a in range(self.n)]

    def _predictions(self) -> list[tuple[int, ...]]:
        """Per non-terminal, the initial items of every rule its closure adds
        (its rules, and those of the non-terminals they start with, ...)."""
        n, rhs, by_lhs, base = self.n, self.rhs, self.by_lhs, self.base
        firsts = [{r[0] for r in (rhs[i] for i in by_lhs[a]) if r and r[0] < n} for a in range(n)]
        out = []
        for a in range(n):
            reached = [a]
            seen = {a}
            for b in reached:  # (grows while it is walked)
                for c in firsts[b]:
                    if c not in seen:
                        seen.add(c)
                        reached.append(c)
            out.append(tuple(base[r] for b in reached for r in by_lhs[b]))
        return out

    def tables(self, keep_conflicts: bool = False) -> LALRTables:
        n, item_next, predict = self.n, self.item_next, self.predict
        kernels: dict[tuple[int, ...], int] = {(0,): 0}
        closures: list[tuple[int, ...]] = []
        goto: list[dict[int, int]] = []
        queue = [(0,)]
        for kernel in queue:  # (grows while it is walked: breadth first)
            closure = list(kernel)
            added: set[int] = set()
            for item in kernel:
                s = item_next[item]
                if 0 <= s < n and s not in added:
                    added.add(s)
                    closure.extend(predict[s])
            if len(added) > 1:
                closure = list(dict.fromkeys(closure))
            closures.append(tuple(closure))
            moves: dict[int, list[int]] = {}
            for item in closure:
                s = item_next[item]
                if s >= 0:
                    moves.setdefault(s, []).append(item + 1)
            out = {}
            for s, advanced in moves.items():
                key = tuple(sorted(advanced))
                target = kernels.get(key)
                if target is None:
                    target = kernels[key] = len(queue)
                    queue.append(key)
                out[s] = target
            goto.append(out)
        self.goto, self.closures = goto, closures
        lookaheads = self._lookaheads()
        return self._actions(lookaheads, keep_conflicts)

    def _lookaheads(self) -> dict[tuple[int, int], int]:
        """``(state, rule) → terminal bitmask`` for each completed item."""
        n, goto, nullable = self.n, self.goto, self.nullable
        rhs = self.rhs
        # the non-terminal transitions (p, A), numbered
        index: dict[tuple[int, int], int] = {}
        for p, moves in enumerate(goto):
            for s in moves:
                if s < n:
                    index[(p, s)] = len(index)
        trans = list(index)
        count = len(trans)
        direct = [0] * count
        reads: list[list[int]] = [[] for _ in range(count)]
        for i, (p, a) in enumerate(trans):
            bits = 0
            for s in goto[goto[p][a]]:
                if s >= n:
                    bits |= 1 << (s - n)
                elif nullable[s]:
                    reads[i].append(index[(goto[p][a], s)])
            direct[i] = bits
        start_symbol = rhs[0][0]
        direct[index[(0, start_symbol)]] |= 1 << (self.end_id - n)
        read = digraph(reads, direct)
        includes: list[list[int]] = [[] for _ in range(count)]
        lookback: dict[tuple[int, int], list[int]] = {}
        for i, (p, b) in enumerate(trans):
            for r in self.by_lhs[b]:
                body = rhs[r]
                q = p
                for k, s in enumerate(body):
                    if s < n and all(t < n and nullable[t] for t in body[k + 1 :]):
                        includes[index[(q, s)]].append(i)
                    q = goto[q][s]
                lookback.setdefault((q, r), []).append(i)
        follow = digraph(includes, read)
        out: dict[tuple[int, int], int] = {}
        for (q, r), sources in lookback.items():
            bits = 0
            for i in sources:
                bits |= follow[i]
            out[(q, r)] = bits
        return out

    def _actions(self, lookaheads: dict[tuple[int, int], int], keep: bool) -> LALRTables:
        n, names, lhs, rhs = self.n, self.names, self.lhs, self.rhs
        actions: dict[int, dict[str, Action]] = {
            p: {names[s]: (True, q) for s, q in moves.items()} for p, moves in enumerate(self.goto)
        }
        reduced: dict[tuple[int, int], int] = {}  # (state, terminal) → rule
        collisions = []
        kept: dict[int, dict[str, tuple[Action, ...]]] = {}
        for (q, r), bits in sorted(lookaheads.items()):
            row = actions[q]
            reduce = (False, (names[lhs[r]], len(rhs[r])))
            while bits:
                low = bits & -bits
                t = low.bit_length() - 1 + n
                bits ^= low
                name = names[t]
                if name in row:
                    if not keep:
                        if (q, t) in reduced:
                            collisions.append((name, reduced[(q, t)], r))
                            continue
                        raise NotLALR(
                            f"Shift/Reduce conflict for terminal {name}: shift it or reduce "
                            f"{self._rule_text(r)}"
                        )
                    entry = kept.setdefault(q, {})
                    entry[name] = (*entry.get(name, (row[name],)), reduce)
                    continue
                reduced[(q, t)] = r
                row[name] = reduce
        if collisions:
            name, a, b = collisions[0]
            raise NotLALR(
                f"Reduce/Reduce collision in {name} between the rules "
                f"{self._rule_text(a)} and {self._rule_text(b)}"
                + (f" (and {len(collisions) - 1} more)" if len(collisions) > 1 else "")
            )
        if kept:
            self._check_no_hidden_left_recursion()
        end = self.goto[0][rhs[0][0]]
        return LALRTables(actions, 0, end, kept)

    def _check_no_hidden_left_recursion(self) -> None:
        """``NotLALR`` when some ``A → B₁…Bₖ C …`` (``k ≥ 1``, every ``Bᵢ``
        nullable) has ``C`` deriving a string that begins with ``A``: a parser
        following every action could then reduce the empty ``B``s forever."""
        n, nullable = self.n, self.nullable
        begins: list[list[int]] = [[] for _ in range(n)]  # A → C: C may begin A's string
        hidden = []
        for a, body in zip(self.lhs, self.rhs, strict=True):
            for k, s in enumerate(body):
                if s >= n:
                    break
                begins[a].append(s)
                if k:
                    hidden.append((a, s, body))
                if not nullable[s]:
                    break
        reached = digraph(begins, [1 << a for a in range(n)])  # bit A: reachable from C
        for a, c, body in hidden:
            if reached[c] >> a & 1:
                raise NotLALR(
                    f"hidden left recursion: {self.names[a]} -> "
                    + " ".join(self.names[s] for s in body)
                    + f" begins with symbols deriving the empty string, then {self.names[c]},"
                    " which derives a string beginning with "
                    f"{self.names[a]} (a parser following every conflicting action "
                    "could reduce the empty symbols without end)"
                )

    def _rule_text(self, r: int) -> str:
        names = self.names
        return f"{names[self.lhs[r]]} -> " + " ".join(names[s] for s in self.rhs[r])
