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

Backends: ``domino`` (parser-pruned subterminal trees) and ``fsm`` (the
Outlines paper's iterative parsing). The language is the one of
``constrain_api.grammar``, reduced by ``constrain_api.lowering`` first
(``ReducedGrammar``: only rules that derive some string), so that every
stack the parser reaches can still be completed into a sentence (the
*viable prefix* property the masks rely on).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from .errors import UnsupportedConstraint
from .lalr import END, NotLALR, lalr_tables

__all__ = ["END", "LRTable", "Stack", "lalr_table"]

#: A parser stack: the LR states from the bottom up.
Stack = tuple[int, ...]
RuleText = tuple[str, tuple[str, ...]]  # (lhs, rhs symbol names)

_UNKNOWN = object()
_MEMO_BOUND = 1_000_000  # entries; stacks of deep nestings are many


def lalr_table(
    rules: Iterable[RuleText], terminals: Collection[str], start: str, *, backend: str
) -> LRTable:
    """The LALR(1) tables, or ``UnsupportedConstraint`` (naming ``backend``)
    with the reason when the grammar has conflicts."""
    try:
        return LRTable(list(rules), set(terminals), start)
    except NotLALR as e:
        raise UnsupportedConstraint(backend, "a grammar that is not LALR(1)", str(e)) from e


class LRTable:
    """LALR(1) tables for ``rules`` (``(lhs, rhs)`` over symbol names; names in
    ``terminals`` are terminals, the others non-terminals) from ``start``.
    Raises ``NotLALR`` on conflicts (:func:`lalr_table` converts it)."""

    def __init__(self, rules: list[RuleText], terminals: set[str], start: str):
        tables = lalr_tables(rules, terminals, start)
        # state -> symbol -> (shift?, next state | (lhs, rhs length))
        self.actions: dict[int, dict[str, tuple[bool, object]]] = tables.actions
        self.terminals = frozenset(terminals)
        self.start: Stack = (tables.start,)
        self.end_state = tables.end
        self._fed: dict[tuple[Stack, str], Stack | None] = {}
        self._expected: dict[Stack, frozenset[str]] = {}

    @property
    def num_states(self) -> int:
        """LR states in the table."""
        return len(self.actions)

    def feed(self, stack: Stack, terminal: str) -> Stack | None:
        """The stack after shifting ``terminal``, or ``None`` if it cannot come next."""
        key = (stack, terminal)
        memo = self._fed
        known = memo.get(key, _UNKNOWN)  # get, not `in` then []: another thread may clear it
        if known is not _UNKNOWN:
            return known
        actions = self.actions
        result = None
        while True:
            act = actions[stack[-1]].get(terminal)
            if act is None:
                break
            shift, arg = act
            if shift:
                result = (*stack, arg)
                break
            lhs, size = arg
            if size:
                stack = stack[:-size]
            stack = (*stack, actions[stack[-1]][lhs][1])
        if len(memo) > _MEMO_BOUND:
            memo.clear()
        memo[key] = result
        return result

    def expected(self, stack: Stack) -> frozenset[str]:
        """The terminals that can come next: those :meth:`feed` shifts (the
        top state's lookaheads, less those a reduction would reject, as LALR
        merges lookaheads)."""
        known = self._expected.get(stack)
        if known is None:
            terminals = self.terminals
            known = frozenset(
                t
                for t in self.actions[stack[-1]]
                if t in terminals and self.feed(stack, t) is not None
            )
            if len(self._expected) > _MEMO_BOUND:
                self._expected.clear()
            self._expected[stack] = known
        return known

    def accepts_end(self, stack: Stack) -> bool:
        """Whether the terminals fed so far form a sentence."""
        actions = self.actions
        while True:
            act = actions[stack[-1]].get(END)
            if act is None:
                return False
            shift, arg = act
            if shift:
                return False
            lhs, size = arg
            if size:
                stack = stack[:-size]
            nxt = actions[stack[-1]][lhs][1]
            if nxt == self.end_state:
                return True
            stack = (*stack, nxt)
