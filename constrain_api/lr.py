"""LR parsing for grammar backends: LALR(1) tables, driven over immutable stacks.

``constrain_api.lalr`` builds the tables (the construction of lark's
``LALR_Analyzer``, over integers); :func:`lalr_table` turns its ``NotLALR``
for a grammar that is not LALR(1) into ``UnsupportedConstraint`` with the
reason. Driving the tables is a few
lines, written here rather than through lark's ``InteractiveParser`` because
grammar backends feed a terminal to the same stack many times (several
scanner positions, several candidate terminals): a stack is a tuple of LR
states, so feeding returns a new one, sharing is free and a stack can key a
cache.

``lalr_table(..., general=True)`` also takes grammars with conflicts (an
ambiguous ``anyOf``, a choice that needs more than one terminal of
lookahead): the table keeps every action of a conflicted entry and
:meth:`LRTable.feed_all` follows them all, returning every stack the
terminal can be shifted onto — a nondeterministic LR parser with one explicit
stack per parse (Tomita's algorithm without the graph-structured stack).
It is exact on any grammar without hidden left recursion (refused), and the
number of stacks a feed explores is bounded (:data:`MAX_STACKS`). Backends
keep sets of stacks already (``domino``'s configurations), so the masks stay
exact: a token is allowed iff some stack takes it.

Backends: ``domino`` (parser-pruned subterminal trees; general) and ``fsm``
(the Outlines paper's iterative parsing; LALR(1) only). The language is the one of
``constrain_api.grammar``, reduced by ``constrain_api.lowering`` first
(``ReducedGrammar``: only rules that derive some string), so that every
stack the parser reaches can still be completed into a sentence (the
*viable prefix* property the masks rely on).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from .errors import CompileLimitExceeded, UnsupportedConstraint
from .lalr import END, NotLALR, lalr_tables

__all__ = ["END", "MAX_STACKS", "LRTable", "Stack", "lalr_table"]

#: A parser stack: the LR states from the bottom up.
Stack = tuple[int, ...]
RuleText = tuple[str, tuple[str, ...]]  # (lhs, rhs symbol names)

_UNKNOWN = object()
_MEMO_BOUND = 1_000_000  # entries; stacks of deep nestings are many

#: The most stacks one feed of a table with conflicts explores (its
#: reductions' branches) before ``CompileLimitExceeded("lr_stacks")``.
MAX_STACKS = 10_000


def lalr_table(
    rules: Iterable[RuleText],
    terminals: Collection[str],
    start: str,
    *,
    backend: str,
    general: bool = False,
) -> LRTable:
    """The LALR(1) tables, or ``UnsupportedConstraint`` (naming ``backend``)
    with the reason when the grammar has conflicts; with ``general=True``
    conflicts are kept (driven by :meth:`LRTable.feed_all`) and only a
    grammar with hidden left recursion is refused."""
    try:
        return LRTable(list(rules), set(terminals), start, general=general)
    except NotLALR as e:
        construct = "a grammar that is not LALR(1)"
        if general and "hidden left recursion" in str(e):
            construct = "a grammar with conflicts and hidden left recursion"
        raise UnsupportedConstraint(backend, construct, str(e)) from e


class LRTable:
    """LALR(1) tables for ``rules`` (``(lhs, rhs)`` over symbol names; names in
    ``terminals`` are terminals, the others non-terminals) from ``start``.
    Raises ``NotLALR`` on conflicts (:func:`lalr_table` converts it), unless
    ``general``: then conflicts are kept and :attr:`deterministic` is false
    where there are any (drive it with :meth:`feed_all`)."""

    def __init__(
        self, rules: list[RuleText], terminals: set[str], start: str, *, general: bool = False
    ):
        tables = lalr_tables(rules, terminals, start, conflicts=general)
        # state -> symbol -> (shift?, next state | (lhs, rhs length))
        self.actions: dict[int, dict[str, tuple[bool, object]]] = tables.actions
        # state -> terminal -> every action, where there are several
        self.conflicts = tables.conflicts
        self.terminals = frozenset(terminals)
        self.start: Stack = (tables.start,)
        self.end_state = tables.end
        self._fed: dict[tuple[Stack, str], Stack | None] = {}
        self._fed_all: dict[tuple[Stack, str], tuple[Stack, ...]] = {}
        self._expected: dict[Stack, frozenset[str]] = {}

    @property
    def num_states(self) -> int:
        """LR states in the table."""
        return len(self.actions)

    @property
    def deterministic(self) -> bool:
        """Whether every entry has one action (no conflicts kept)."""
        return not self.conflicts

    @property
    def num_conflicts(self) -> int:
        """Entries (state, terminal) with several actions."""
        return sum(len(row) for row in self.conflicts.values())

    def feed_all(self, stack: Stack, terminal: str) -> tuple[Stack, ...]:
        """Every stack after shifting ``terminal`` (empty if it cannot come
        next): one at most without conflicts; with conflicts, one per way of
        reducing first (distinct stacks, in a fixed order). Raises
        ``CompileLimitExceeded`` when a feed explores more than
        :data:`MAX_STACKS` stacks."""
        key = (stack, terminal)
        memo = self._fed_all
        known = memo.get(key)
        if known is not None:
            return known
        if self.conflicts:
            result = self._feed_general(stack, terminal)
        else:
            one = self._feed_one(stack, terminal)
            result = () if one is None else (one,)
        if len(memo) > _MEMO_BOUND:
            memo.clear()
        memo[key] = result
        return result

    def _actions_of(self, state: int, terminal: str) -> tuple[tuple[bool, object], ...]:
        row = self.conflicts.get(state)
        several = row.get(terminal) if row else None
        if several is not None:
            return several
        act = self.actions[state].get(terminal)
        return () if act is None else (act,)

    def _reduced(self, stack: Stack, lhs: str, size: int) -> tuple[Stack, int]:
        """Reducing ``size`` symbols to ``lhs`` on ``stack``: the stack left
        below them and the state its top goes to on ``lhs`` (to push)."""
        base = stack[:-size] if size else stack
        return base, self.actions[base[-1]][lhs][1]

    def _branches(self, stack: Stack, terminal: str):
        """The stacks every sequence of reductions on ``terminal`` reaches
        from ``stack`` (``stack`` first; each once), with their actions on it."""
        seen = {stack}
        todo = [stack]
        while todo:
            stack = todo.pop()
            acts = self._actions_of(stack[-1], terminal)
            yield stack, acts
            for shift, arg in acts:
                if shift:
                    continue
                base, state = self._reduced(stack, *arg)
                nxt = (*base, state)
                if nxt not in seen:
                    if len(seen) >= MAX_STACKS:
                        raise CompileLimitExceeded(
                            "lr_stacks",
                            MAX_STACKS,
                            detail=f"the parses of an ambiguous grammar before {terminal}",
                        )
                    seen.add(nxt)
                    todo.append(nxt)

    def _feed_general(self, stack: Stack, terminal: str) -> tuple[Stack, ...]:
        out: dict[Stack, None] = {}
        for reached, acts in self._branches(stack, terminal):
            for shift, arg in acts:
                if shift:
                    out[(*reached, arg)] = None
        return tuple(out)

    def feed(self, stack: Stack, terminal: str) -> Stack | None:
        """The stack after shifting ``terminal``, or ``None`` if it cannot
        come next (a table without conflicts; else :meth:`feed_all`)."""
        key = (stack, terminal)
        memo = self._fed
        known = memo.get(key, _UNKNOWN)  # get, not `in` then []: another thread may clear it
        if known is not _UNKNOWN:
            return known
        if self.conflicts:
            raise ValueError("this table has conflicts: feed_all gives every stack")
        result = self._feed_one(stack, terminal)
        if len(memo) > _MEMO_BOUND:
            memo.clear()
        memo[key] = result
        return result

    def _feed_one(self, stack: Stack, terminal: str) -> Stack | None:
        """:meth:`feed` unmemoized, on a table without conflicts."""
        actions = self.actions
        while True:
            act = actions[stack[-1]].get(terminal)
            if act is None:
                return None
            shift, arg = act
            if shift:
                return (*stack, arg)
            base, state = self._reduced(stack, *arg)
            stack = (*base, state)

    def expected(self, stack: Stack) -> frozenset[str]:
        """The terminals that can come next: those :meth:`feed_all` shifts (the
        top state's lookaheads, less those a reduction would reject, as LALR
        merges lookaheads)."""
        known = self._expected.get(stack)
        if known is None:
            terminals = self.terminals
            known = frozenset(
                t for t in self.actions[stack[-1]] if t in terminals and self.feed_all(stack, t)
            )
            if len(self._expected) > _MEMO_BOUND:
                self._expected.clear()
            self._expected[stack] = known
        return known

    def accepts_end(self, stack: Stack) -> bool:
        """Whether the terminals fed so far form a sentence (by some parse)."""
        actions = self.actions
        if self.conflicts:
            for reached, acts in self._branches(stack, END):
                for shift, arg in acts:
                    if not shift and self._reduced(reached, *arg)[1] == self.end_state:
                        return True
            return False
        while True:
            act = actions[stack[-1]].get(END)
            if act is None:
                return False
            shift, arg = act
            if shift:
                return False
            base, state = self._reduced(stack, *arg)
            if state == self.end_state:
                return True
            stack = (*base, state)
