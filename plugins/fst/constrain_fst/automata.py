"""Byte-level acceptors in pynini from the core's regex AST, and their
composition with T_V (``wildcards.wildcard_detokenizer``) into the token
automaton.

Labels: byte ``b`` is label ``b + 1`` (OpenFst reserves 0 for epsilon), the
end marker is ``END``; token ``i`` is input label ``i + 1``.
"""

from __future__ import annotations

import functools
import time

import pynini

from constrain_api import ByteDFA, CompileLimitExceeded, checkpoint, current_budget
from constrain_api.automata import (
    DEFAULT_MAX_STATES,
    Alt,
    CharSet,
    Difference,
    Empty,
    Intersect,
    Literal,
    Node,
    Repeat,
    Seq,
    utf8_sequences,
)

from .arcs import TokenAutomaton, fst_arcs

END = 257  # after the text: where EOS is allowed
ONE = pynini.Weight.one("tropical")


def _ranges_acceptor(ranges) -> pynini.Fst:
    """One step per byte range: ``ranges`` is a sequence of (lo, hi) byte pairs."""
    fst = pynini.Fst()
    state = fst.add_state()
    fst.set_start(state)
    for lo, hi in ranges:
        nxt = fst.add_state()
        for b in range(lo, hi + 1):
            fst.add_arc(state, pynini.Arc(b + 1, b + 1, ONE, nxt))
        state = nxt
    fst.set_final(state)
    return fst


def _bytes_acceptor(data: bytes) -> pynini.Fst:
    return _ranges_acceptor([(b, b) for b in data])


def epsilon() -> pynini.Fst:
    """The acceptor of the empty string."""
    fst = pynini.Fst()
    s = fst.add_state()
    fst.set_start(s)
    fst.set_final(s)
    return fst


def label_acceptor(label: int) -> pynini.Fst:
    """The acceptor of the one-symbol string ``label``."""
    fst = pynini.Fst()
    a, b = fst.add_state(), fst.add_state()
    fst.set_start(a)
    fst.set_final(b)
    fst.add_arc(a, pynini.Arc(label, label, ONE, b))
    return fst


def _nothing() -> pynini.Fst:
    fst = pynini.Fst()
    fst.set_start(fst.add_state())
    return fst


def charset_acceptor(cs: CharSet) -> pynini.Fst:
    """The UTF-8 encodings of the characters of ``cs`` (a fresh copy)."""
    return _charset_acceptor(cs).copy()


@functools.lru_cache(maxsize=1024)
def _charset_acceptor(cs: CharSet) -> pynini.Fst:
    seqs = utf8_sequences(cs)
    if not seqs:
        return _nothing()
    return optimize(pynini.union(*(_ranges_acceptor(seq) for seq in seqs)))


#: OpenFst determinizes in one call that cannot be interrupted, and its work
#: grows with (input states) x (output states): past this many pairs it is
#: stopped (its state threshold) and the core's determinization, which checks
#: the compile budget per state, builds the automaton instead.
DETERMINIZE_WORK = 20_000_000
#: The most one such pair has cost (a generated regex: 554 input states,
#: 36,102 output states in 44.6 s on a 2-core VM), so that the pairs allowed
#: also fit in what is left of the compile's ``max_seconds``.
SECONDS_PER_PAIR = 2.5e-6


#: Determinization past this many pairs runs in stages of 4x the output
#: states each, timed, and stops before a stage whose projected time
#: passes what is left of ``max_seconds``: the cost of a pair varies with
#: the subsets' sizes (a generated regex's pairs cost 4.1e-6 s, not
#: ``SECONDS_PER_PAIR``, and its 30 s compile ran 49 s in one call).
STAGE_PAIRS = 500_000
#: The margin on a stage's projection (the last stage's time times the
#: growth in output states, or the last two stages' growth where larger).
STAGE_MARGIN = 1.5
_clock = time.perf_counter


class TooLargeForOpenFst(Exception):
    """OpenFst's determinization was stopped at its work bound (``optimize``)."""


def optimize(fsa: pynini.Fst, max_states: int | None = None) -> pynini.Fst:
    """An equivalent epsilon-free minimal DFA (in place where it can be).

    What pynini's ``optimize`` does for an unweighted acceptor, without the
    determinization where OpenFst's property check already finds the
    epsilon-free machine deterministic — as a repetition of a character
    class or a literal is — which halved the quoted text's acceptor time.
    With ``max_states``, OpenFst's state threshold stops determinization
    past ``max_states`` states (``CompileLimitExceeded``) or past
    ``DETERMINIZE_WORK`` pairs, or the pairs that fit in what is left of the
    compile's ``max_seconds`` (``TooLargeForOpenFst``), instead of building
    millions of states (or a few, of huge subsets) first."""
    fsa.rmepsilon()
    if not fsa.properties(pynini.I_DETERMINISTIC, True) & pynini.I_DETERMINISTIC:
        if max_states is None:
            fsa = pynini.determinize(fsa)
        else:
            pairs = DETERMINIZE_WORK
            budget = current_budget()
            if budget is not None and budget.max_seconds is not None:
                left = max(budget.max_seconds - budget.elapsed(), 0.0)
                pairs = min(pairs, int(left / SECONDS_PER_PAIR))
            threshold = min(max_states, pairs // max(fsa.num_states(), 1))
            fsa = _determinized_in_stages(fsa, threshold, budget)
            if fsa.num_states() > max_states:
                raise CompileLimitExceeded(
                    "max_states", max_states, fsa.num_states(), "determinizing the byte automaton"
                )
            if fsa.num_states() > threshold:
                raise TooLargeForOpenFst(threshold)
    checkpoint()
    # Sorted first: OpenFst's minimizer left equivalent states apart on
    # unsorted arcs (``[^"]*"``: 11 states instead of 10).
    return fsa.arcsort("ilabel").minimize()


def _determinized_in_stages(fsa: pynini.Fst, threshold: int, budget) -> pynini.Fst:
    """``pynini.determinize`` stopped past ``threshold`` output states; past
    ``STAGE_PAIRS`` pairs, first with 1/4^k of them, each stage timed, and
    ``TooLargeForOpenFst`` before a stage projected to pass what is left of
    the budget's ``max_seconds`` (OpenFst cannot be interrupted: a stage
    once begun runs to its state bound)."""
    stage = max(STAGE_PAIRS // max(fsa.num_states(), 1), 1)
    before = None  # the last stage's time
    while stage < threshold:
        started = _clock()
        out = pynini.determinize(fsa, nstate=stage + 1)
        if out.num_states() <= stage:
            return out
        spent = _clock() - started
        following = min(stage * 4, threshold)
        # (the growth of the last two stages where it was faster than linear:
        # 0.05 -> 2.6 -> 27.5 s for 900 -> 3,600 -> 14,400 states once)
        growth = following / stage
        if before is not None:
            growth = max(growth, spent / max(before, 1e-3))
        if budget is not None and budget.max_seconds is not None:
            left = budget.max_seconds - budget.elapsed()
            if spent * growth * STAGE_MARGIN > left:
                raise TooLargeForOpenFst(stage)
        before, stage = spent, following
    return pynini.determinize(fsa, nstate=threshold + 1)


def to_fsa(node: Node, max_states: int | None = None) -> pynini.Fst:
    """The byte acceptor of a regex AST, with pynini's union, concatenation
    and closure (intersection and difference for lookarounds). Optimized
    (``optimize``, bounded by ``max_states``) where it is copied — under a
    repetition of two copies or more — and by the caller at the top; not at
    every node, which cost more than it saved, nor under an optional part
    (``(,"email":…)?``: 4 ms of the JSON object's 21, determinized again at
    the top anyway). A repetition met twice (JSON Schema formats repeat
    ``[0-9A-Fa-f]{1,4}`` dozens of times) is built once."""
    return _to_fsa(node, {}, max_states)


def _to_fsa(node: Node, repeats: dict[Node, pynini.Fst], limit: int | None) -> pynini.Fst:
    if isinstance(node, Empty):
        return epsilon()
    if isinstance(node, CharSet):
        return charset_acceptor(node)
    if isinstance(node, Literal):
        return _bytes_acceptor(node.text.encode("utf-8"))
    if isinstance(node, Seq):
        out = epsilon()
        for part in node.parts:
            out.concat(_to_fsa(part, repeats, limit))
        return out
    if isinstance(node, Alt):
        return pynini.union(*(_to_fsa(o, repeats, limit) for o in node.options))
    if isinstance(node, Repeat) and node.max == 1:  # one copy at most: not copied,
        inner = _to_fsa(node.node, repeats, limit)  # so left to the top's optimization
        return inner if node.min == 1 else pynini.union(inner, epsilon())
    if isinstance(node, Repeat):
        found = repeats.get(node)
        if found is None:
            inner = _to_fsa(node.node, repeats, limit)
            copies = max(node.min, node.max or 0, 1) * max(inner.num_states(), 1)
            if limit is not None and copies > limit:  # checked before pynini builds the copies
                raise CompileLimitExceeded(
                    "max_states", limit, copies, "a counted repetition of the byte automaton"
                )
            closure = pynini.closure(inner, node.min, *(() if node.max is None else (node.max,)))
            found = repeats[node] = optimize(closure, limit)
        return found.copy()
    if isinstance(node, Intersect | Difference):
        a, b = (optimize(_to_fsa(n, repeats, limit), limit) for n in (node.left, node.right))
        op = pynini.intersect if isinstance(node, Intersect) else pynini.difference
        return optimize(op(a, b), limit)
    raise TypeError(f"not a regex AST node: {node!r}")


def prefix_acceptor(node: Node, max_states: int | None = None) -> pynini.Fst:
    """Strings of the language followed by ``END``, and all their prefixes:
    every state of the trimmed automaton made final. Built by OpenFst from
    the AST; where its determinization would pass ``DETERMINIZE_WORK``, from
    the core's minimal DFA (bounded by ``max_states`` and the compile budget)."""
    try:
        fsa = optimize(pynini.concat(to_fsa(node, max_states), label_acceptor(END)), max_states)
    except TooLargeForOpenFst:
        dfa = ByteDFA.from_node(node, max_states=max_states or DEFAULT_MAX_STATES)
        # a DFA and one end label: deterministic once its epsilons are gone
        fsa = optimize(pynini.concat(dfa_acceptor(dfa), label_acceptor(END)))
    for state in fsa.states():
        fsa.set_final(state)
    return fsa.arcsort("ilabel")


def dfa_acceptor(dfa: ByteDFA) -> pynini.Fst:
    """The strings of a byte DFA (full matches) as a pynini acceptor."""
    fst = pynini.Fst()
    if dfa.num_states == 0:
        fst.set_start(fst.add_state())
        return fst
    fst.add_states(dfa.num_states)
    fst.set_start(dfa.start)
    rows = dfa.rows
    for s in range(dfa.num_states):
        checkpoint()
        if dfa.accepting[s]:
            fst.set_final(s)
        for b, nxt in enumerate(rows[s]):
            if nxt >= 0:
                fst.add_arc(s, pynini.Arc(b + 1, b + 1, ONE, nxt))
    return fst


def token_automaton(detok: pynini.Fst, acceptor: pynini.Fst) -> TokenAutomaton:
    """The token-level DFA: T_V composed with the prefix acceptor, read on
    tokens, its epsilons removed state by state on first use
    (``arcs.TokenAutomaton``). Its arcs out of a state are exactly the tokens
    allowed there (EOS where the text is complete).

    Deterministic by construction: T_V spells each token one way from a
    state (or once per wildcard group) and the acceptor is a DFA, so each
    label leaves a state at most once (``StateInfo`` checks it on first use).
    Minimization is not run: it never reduced the state count on the
    workloads measured (the byte DFA is minimal).
    """
    return TokenAutomaton(fst_arcs(pynini.compose(detok, acceptor), last_use=True))
