"""Grammars as pushdown automata (Koo et al. §4).

A grammar (the core's ``ReducedGrammar``: every rule derives some string)
becomes a recursive transition network
over bytes: one acceptor per non-terminal whose arcs read bytes (its
terminals' DFAs, each preceded by any number of ``%ignore``d terminals) or
*call* another non-terminal. Assembled into one FST, a call arc p → r to B
becomes an open parenthesis p → start(B) plus a close parenthesis from each
final state of B back to r, one parenthesis pair per call site: a pushdown
transducer (PDT) in OpenFst's sense. ``pynini.pdt_compose`` composes it with
T_V, so tokens spanning terminals and non-terminals (``{"``, ``"]}``) are
found by the composition; pynini cannot step a PDT, so the decoder keeps the
stack (``PushdownCompiled``).

Left recursion would make the decoder push forever without reading: direct
left recursion (``A: A x | y``, which is what lark makes of ``x*``) is
rewritten as ``A: y x*`` inside A's acceptor; any other cycle of calls that
reads nothing raises ``UnsupportedConstraint``.
"""

from __future__ import annotations

import pynini

from constrain_api import (
    CompileLimitExceeded,
    ReducedGrammar,
    UnsupportedConstraint,
)

from .arcs import TokenAutomaton, fst_arcs
from .automata import (
    DETERMINIZE_WORK,
    END,
    ONE,
    TooLargeForOpenFst,
    dfa_acceptor,
    epsilon,
    label_acceptor,
    optimize,
)

#: The non-terminal that calls the grammar's start, then reads the end marker.
ROOT = "$root"
#: Call labels inside a non-terminal's acceptor: ``CALL + index``.
CALL = 1 << 20
#: Parenthesis labels of the assembled PDT: open ``PAREN + 2k``, close ``PAREN + 2k + 1``.
PAREN = 1 << 24


def _optimized(fst: pynini.Fst, max_states: int, what: str) -> pynini.Fst:
    """``optimize``; past OpenFst's determinization work bound, ``CompileLimitExceeded``."""
    try:
        return optimize(fst, max_states)
    except TooLargeForOpenFst:
        raise CompileLimitExceeded(
            "determinize_work", DETERMINIZE_WORK, None, f"{what}: OpenFst's determinization"
        ) from None


class Network:
    """The recursive transition network of a grammar, then its PDT."""

    def __init__(self, grammar: ReducedGrammar, max_states: int) -> None:
        self.max_states = max_states
        self.terminals = {name: dfa_acceptor(grammar.dfas[name]) for name in grammar.names}
        self.rules: dict[str, list[tuple[str, ...]]] = {}
        for lhs, rhs in grammar.rules:
            self.rules.setdefault(lhs, []).append(rhs)
        self.rules[ROOT] = [(grammar.start,)]  # calls start, then reads the end marker
        self.names = list(self.rules)
        self.index = {name: i for i, name in enumerate(self.names)}
        ignore = [self.terminals[n] for n in grammar.names if n in grammar.ignore]
        self.ignore = (
            _optimized(pynini.closure(pynini.union(*ignore)), max_states, "%ignore")
            if ignore
            else epsilon()
        )
        self.acceptors = {name: self._acceptor(name) for name in self.names}
        self._refuse_left_recursion(_nullable(self.rules, grammar.nullable))

    def _sequence(self, symbols: tuple[str, ...]) -> pynini.Fst:
        out = epsilon()
        for sym in symbols:
            if sym in self.index:
                part = label_acceptor(CALL + self.index[sym])
            else:
                part = pynini.concat(self.ignore, self.terminals[sym])
            out = pynini.concat(out, part)
        return out

    def _acceptor(self, name: str) -> pynini.Fst:
        """A's acceptor: its rules' union; ``A: A x | y`` as ``y x*``."""
        base = [r for r in self.rules[name] if not r or r[0] != name]
        tails = [r[1:] for r in self.rules[name] if r and r[0] == name and len(r) > 1]
        fst = pynini.union(*(self._sequence(r) for r in base))
        if tails:
            fst = pynini.concat(fst, pynini.closure(pynini.union(*map(self._sequence, tails))))
        if name == ROOT:
            fst = pynini.concat(fst, pynini.concat(self.ignore, label_acceptor(END)))
        fst = _optimized(fst, self.max_states, f"the acceptor of {name}")
        if fst.num_states() > self.max_states:
            raise CompileLimitExceeded(
                "max_states", self.max_states, fst.num_states(), f"the acceptor of {name}"
            )
        return fst

    def _refuse_left_recursion(self, nullable: set[str]) -> None:
        """A cycle of calls reading nothing (through nullable prefixes) would
        let the decoder push without end: refuse it, naming the cycle."""
        leading: dict[str, set[str]] = {}
        for name, fst in self.acceptors.items():
            found: set[str] = set()
            todo, seen = [fst.start()], {fst.start()}
            while todo:
                for arc in fst.arcs(todo.pop()):
                    if arc.ilabel >= CALL:
                        callee = self.names[arc.ilabel - CALL]
                        found.add(callee)
                        if callee in nullable and arc.nextstate not in seen:
                            seen.add(arc.nextstate)
                            todo.append(arc.nextstate)
            leading[name] = found
        on_path: list[str] = []
        done: set[str] = set()

        def visit(name: str) -> None:
            if name in on_path:
                cycle = " → ".join([*on_path[on_path.index(name) :], name])
                raise UnsupportedConstraint(
                    "fst",
                    f"left recursion {cycle}",
                    "a pushdown automaton would call without reading; only direct "
                    "left recursion (A: A x | y) is rewritten",
                )
            if name in done:
                return
            on_path.append(name)
            for callee in sorted(leading[name]):
                visit(callee)
            on_path.pop()
            done.add(name)

        for name in self.names:
            visit(name)

    def pdt(self) -> tuple[pynini.Fst, pynini.PdtParentheses, dict[int, int]]:
        """One FST with a parenthesis pair per call site, every state final
        (prefixes count); ``ROOT`` is where it starts. Returns it, the
        parentheses, and each close label's open label."""
        out = pynini.Fst()
        offset, starts, finals = {}, {}, {}
        for name in self.names:
            fst = self.acceptors[name]
            offset[name] = out.num_states()
            out.add_states(fst.num_states())
            starts[name] = offset[name] + fst.start()
            finals[name] = [
                offset[name] + s
                for s in fst.states()
                if fst.final(s) != pynini.Weight.zero("tropical")
            ]
        parens = pynini.PdtParentheses()
        closes: dict[int, int] = {}
        pair = 0
        for name in self.names:
            fst, base = self.acceptors[name], offset[name]
            for s in fst.states():
                for arc in fst.arcs(s):
                    if arc.ilabel < CALL:
                        out.add_arc(
                            base + s, pynini.Arc(arc.ilabel, arc.ilabel, ONE, base + arc.nextstate)
                        )
                        continue
                    callee = self.names[arc.ilabel - CALL]
                    open_, close = PAREN + 2 * pair, PAREN + 2 * pair + 1
                    pair += 1
                    parens.add_pair(open_, close)
                    closes[close] = open_
                    out.add_arc(base + s, pynini.Arc(open_, open_, ONE, starts[callee]))
                    for f in finals[callee]:
                        out.add_arc(f, pynini.Arc(close, close, ONE, base + arc.nextstate))
        out.set_start(starts[ROOT])
        for s in out.states():
            out.set_final(s)
        return out.arcsort("ilabel"), parens, closes


def _nullable(rules, empty: frozenset[str]) -> set[str]:
    """The non-terminals that derive the empty string (``empty``: the terminals that match it)."""
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, options in rules.items():
            if name not in nullable and any(
                all(s in empty or s in nullable for s in rhs) for rhs in options
            ):
                nullable.add(name)
                changed = True
    return nullable


def pushdown_automaton(
    detok: pynini.Fst, pdt: pynini.Fst, parens: pynini.PdtParentheses
) -> TokenAutomaton:
    """T_V composed with the byte PDT (parentheses kept), read on tokens,
    epsilon-free: arcs read tokens, wildcard groups or parentheses. Not
    determinized: a pushdown automaton's choices are resolved by the stack."""
    composed = pynini.pdt_compose(detok, pdt, parens, left_pdt=False)
    return TokenAutomaton(fst_arcs(composed, last_use=True), eager=True)
