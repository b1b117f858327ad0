"""The parser: lark's LALR(1) tables, driven over immutable stacks.

lark builds the tables (``LALR_Analyzer``; a grammar that is not LALR(1)
raises lark's ``GrammarError``, which the backend turns into
``UnsupportedConstraint`` with lark's reason). Driving them is a few lines,
written here rather than through lark's ``InteractiveParser`` because the
subterminal-tree walk feeds a terminal to the same stack many times: a stack
is a tuple of LR states, so feeding returns a new one, sharing is free and a
stack can key a cache.
"""

from __future__ import annotations

from lark.common import ParserConf
from lark.exceptions import GrammarError
from lark.grammar import NonTerminal, Rule
from lark.grammar import Terminal as LarkTerminal
from lark.parsers.lalr_analysis import LALR_Analyzer, Shift

END = "$END"

Stack = tuple[int, ...]
_UNKNOWN = object()


class LRTable:
    """LALR(1) tables for ``rules`` (``(lhs, rhs)`` over symbol names; names in
    ``terminals`` are terminals, the others non-terminals) from ``start``."""

    def __init__(self, rules: list[tuple[str, tuple[str, ...]]], terminals: set[str], start: str):
        lark_rules = [
            Rule(
                NonTerminal(lhs),
                [LarkTerminal(s) if s in terminals else NonTerminal(s) for s in rhs],
            )
            for lhs, rhs in rules
        ]
        analyzer = LALR_Analyzer(ParserConf(lark_rules, {}, [start]), strict=False)
        analyzer.compute_lalr()  # GrammarError on conflicts
        table = analyzer.parse_table
        # state -> symbol -> (shift?, next state | (lhs, rhs length))
        self.actions: dict[int, dict[str, tuple[bool, object]]] = {
            state: {
                symbol: (True, arg)
                if action is Shift
                else (False, (arg.origin.name, len(arg.expansion)))
                for symbol, (action, arg) in acts.items()
            }
            for state, acts in table.states.items()
        }
        self.start: Stack = (table.start_states[start],)
        self.end_state = table.end_states[start]
        #: feed's results, bounded
        self._memo: dict[tuple[Stack, str], Stack | None] = {}

    def feed(self, stack: Stack, terminal: str) -> Stack | None:
        """The stack after shifting ``terminal``, or ``None`` if it cannot come next."""
        key = (stack, terminal)
        memo = self._memo
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
        if len(memo) > 1_000_000:  # bounded: stacks of deep nestings are many
            memo.clear()
        memo[key] = result
        return result

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


__all__ = ["END", "GrammarError", "LRTable", "Stack"]
