"""``ByteDFA`` → regex AST, by state elimination over characters.

``dfa_to_node(dfa)`` gives a ``Node`` (``to_regex`` prints it) with the DFA's
language, for automata whose strings are valid UTF-8 (every automaton built
from a regex, and their products and differences restricted to such a
language). It is what lets a set operation — a complement, a difference,
an intersection — computed on automata come back as regex text, which every
backend reads.

Two steps: the byte automaton's UTF-8 sequences are folded into character
edges (``CharSet`` labels, computed on runs of equal byte classes, never byte
by byte), then states are eliminated, cheapest first (fewest in × out edges),
each elimination rewriting ``p → q → r`` into ``p → r`` with
``label(p,q) label(q,q)* label(q,r)``. The result can be exponentially larger
than the automaton; ``max_size`` (characters of the printed regex, checked as
it grows) raises ``CompileLimitExceeded`` instead.
"""

from __future__ import annotations

from ..errors import CompileLimitExceeded
from .dfa import ByteDFA
from .printer import to_regex
from .regex import CharSet, Empty, Node, alt, repeat, seq

__all__ = ["WEIGH_FIRST", "char_edges", "dfa_to_node", "dfa_to_regex"]

# (first byte range, continuation count, payload bits of the first byte)
_LEADS = (
    (0x00, 0x7F, 0, 0x7F),
    (0xC2, 0xDF, 1, 0x1F),
    (0xE0, 0xEF, 2, 0x0F),
    (0xF0, 0xF4, 3, 0x07),
)


def _runs(dfa: ByteDFA, state: int, lo: int, hi: int) -> list[tuple[int, int, int]]:
    """``(first, last, target)`` for the maximal runs of equal live targets
    of ``state`` in bytes ``lo..hi`` (the row's runs, ``runs_of``, cut to
    the range: found once per state, not byte by byte per character)."""
    return [
        (max(first, lo), min(last, hi), target)
        for first, last, target in dfa.runs_of(state)
        if first <= hi and last >= lo
    ]


def char_edges(dfa: ByteDFA, state: int) -> dict[int, list[tuple[int, int]]]:
    """Target state → code-point ranges leading there from ``state``: the
    byte transitions of whole UTF-8 characters (the states inside a
    character's bytes skipped), for automata over valid UTF-8."""
    edges: dict[int, list[tuple[int, int]]] = {}

    def follow(s: int, more: int, lo_cp: int, hi_cp: int) -> None:
        # [lo_cp, hi_cp]: the code points whose leading bytes took us to s; each
        # continuation byte multiplies by 64 and adds 0..63
        if s < 0:
            return
        if more == 0:
            edges.setdefault(s, []).append((lo_cp, hi_cp))
            return
        for first, last, target in _runs(dfa, s, 0x80, 0xBF):
            if lo_cp == hi_cp or (first, last) == (0x80, 0xBF):
                # one prefix, or every continuation byte: still one range
                follow(target, more - 1, lo_cp * 64 + first - 0x80, hi_cp * 64 + last - 0x80)
            else:  # several prefixes, part of the continuations: a range per prefix
                for cp in range(lo_cp, hi_cp + 1):
                    follow(target, more - 1, cp * 64 + first - 0x80, cp * 64 + last - 0x80)

    for lo, hi, more, bits in _LEADS:
        for first, last, target in _runs(dfa, state, lo, hi):
            follow(target, more, first & bits, last & bits)
    return edges


#: From this many states on, the elimination is first run on the labels'
#: weights alone (integers), which fail where the labelled run would: a
#: regex past ``max_size`` is known as such without building its AST
#: (8-40 ms a refused automaton of 100-700 states, a tenth of that weighed).
WEIGH_FIRST = 64


def dfa_to_node(dfa: ByteDFA, *, max_size: int = 20_000) -> Node:
    """A regex AST of ``dfa``'s language (``CharSet(())`` if it is empty)."""
    if dfa.is_empty():
        return CharSet(())
    dfa = dfa.minimize()
    edges = [char_edges(dfa, s) for s in range(dfa.num_states)]
    if dfa.num_states >= WEIGH_FIRST:
        _eliminate(dfa, edges, max_size, build=False)
    return _eliminate(dfa, edges, max_size, build=True)


def _eliminate(
    dfa: ByteDFA, edges: list[dict[int, list[tuple[int, int]]]], max_size: int, *, build: bool
) -> Node:
    """State elimination over ``edges`` (each state's :func:`char_edges`):
    the AST with ``build``; without, only the weights (a cheap size measure
    of each label), which raise ``CompileLimitExceeded`` exactly where the
    labelled run does (the same edges eliminated in the same order) and
    return ``Empty()``."""
    n = dfa.num_states
    start, final = n, n + 1
    # out_edges[p][q] = (label AST of p → q, its weight: a cheap size measure)
    out_edges: dict[int, dict[int, tuple[Node, int]]] = {p: {} for p in range(n + 2)}
    in_edges: dict[int, set[int]] = {p: set() for p in range(n + 2)}
    nothing = Empty()  # (every label, without build)

    def add(p: int, q: int, label: Node, weight: int) -> None:
        old = out_edges[p].get(q)
        if old is not None:
            label, weight = alt(old[0], label) if build else nothing, old[1] + weight + 1
        if weight > max_size:
            raise CompileLimitExceeded(
                "regex_size", max_size, None, "the automaton's regex (state elimination) is too big"
            )
        out_edges[p][q] = (label, weight)
        in_edges[q].add(p)

    add(start, dfa.start, nothing, 0)
    for s in range(n):
        if dfa.accept[s]:
            add(s, final, nothing, 0)
        for target, ranges in edges[s].items():
            add(s, target, CharSet(tuple(ranges)) if build else nothing, 1 + len(ranges))
    for q in sorted(range(n), key=lambda x: len(in_edges[x]) * len(out_edges[x])):
        loop = out_edges[q].pop(q, None)
        in_edges[q].discard(q)
        if loop is None:
            star, star_w = nothing, 0
        else:
            star, star_w = repeat(loop[0], 0, None) if build else nothing, loop[1] + 1
        for p in in_edges[q]:
            head, head_w = out_edges[p].pop(q)
            for r, (tail, tail_w) in out_edges[q].items():
                label = seq(head, star, tail) if build else nothing
                add(p, r, label, head_w + star_w + tail_w)
        for r in out_edges[q]:
            in_edges[r].discard(q)
        out_edges[q] = {}
        in_edges[q] = set()
    return out_edges[start].get(final, (CharSet(()), 0))[0]


def dfa_to_regex(dfa: ByteDFA, *, max_size: int = 20_000) -> str:
    """``to_regex(dfa_to_node(dfa))``: portable regex text of the DFA's language."""
    text = to_regex(dfa_to_node(dfa, max_size=max_size))
    if len(text) > max_size:
        raise CompileLimitExceeded("regex_size", max_size, len(text), "the automaton's regex")
    return text
