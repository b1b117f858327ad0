"""Wildcard terminals: the per-token character counts, the closed states, and
exact masks where wildcard and byte spellings meet (tokens half inside a
class, partial UTF-8, states where a class acts uniformly only for a while)."""

from __future__ import annotations

import random

import numpy as np
import pynini
import pytest
from constrain_conformance import paths
from constrain_fst.automata import _parse_vector, arc_arrays, prefix_acceptor
from constrain_fst.wildcards import (
    byte_table,
    candidate_classes,
    closed_states,
    token_text,
    wild_chars,
)

import constrain_api as ca
from constrain_api.automata import CharSet, parse_regex

TOKENS = [
    "x", "a", "y", '"', "xa", "xy", "ax", "xx", "xxx", 'x"', '"x', "é", "xé", "éa",
    " ", " x", " ax", " xé", "  x", ' "x', " a\"",
    b"\xc3", b"\xa9", b"x\xc3", "\n", "x\ny", "中", "中x", "<eos>",
]  # fmt: skip


@pytest.fixture(scope="module")
def vocab() -> ca.Vocabulary:
    return ca.Vocabulary.from_list(TOKENS, eos="<eos>")


def _table(pattern: str) -> np.ndarray:
    return byte_table(prefix_acceptor(parse_regex(pattern)))[0]


def test_wild_chars_count_characters_of_tokens_wholly_in_the_class(vocab):
    chars, tails = wild_chars(token_text(vocab), CharSet(((0, 0x21), (0x23, 0x10FFFF))))  # [^"]
    count = {TOKENS[i]: int(chars[i]) for i in range(len(TOKENS))}
    assert count["xxx"] == 3 and count["xé"] == 2 and count["中x"] == 2 and count["\n"] == 1
    # a quote, partial UTF-8 and the special token are never wild
    for t in ('"', 'x"', '"x', b"\xc3", b"\xa9", b"x\xc3", "<eos>"):
        assert count[t] == 0, t
    # headed: any first character, the rest (at least one) inside; wild tokens too
    tail = {TOKENS[i]: int(tails[i]) for i in range(len(TOKENS))}
    assert tail['"x'] == 1 and tail['"'] == 0 and tail['x"'] == 0 and tail["xxx"] == 2
    assert tail["x"] == 0 and tail["中x"] == 1 and tail[b"x\xc3"] == 0
    chars, tails = wild_chars(token_text(vocab), CharSet.range("a", "z"))
    assert int(chars[TOKENS.index("xé")]) == 0 and int(chars[TOKENS.index("ax")]) == 2
    assert int(tails[TOKENS.index(" ax")]) == 2 and int(tails[TOKENS.index("éa")]) == 1
    assert int(tails[TOKENS.index(" xé")]) == 0 and int(tails[TOKENS.index("  x")]) == 0
    assert int(tails[TOKENS.index("ax")]) == 1  # wild, and headed by its first letter


def test_closed_states_follow_the_definition():
    table = _table('[^"]*"')  # the loop state: uniform, next = itself
    closed, nxt = closed_states(table, CharSet(((0, 0x21), (0x23, 0x10FFFF))))
    assert closed[0] and nxt[0] == 0
    # mid-character states: every character of the class dies there (closed, next -1)
    mid = table[0, 0xC3]
    assert closed[mid] and nxt[mid] == -1

    table = _table("[a-z]b")  # uniform at the start, but 'b' alone is allowed next
    closed, nxt = closed_states(table, CharSet.range("a", "z"))
    assert nxt[0] >= 0 and not closed[0]

    table = _table("[a-z]{0,2};")  # a chain of uniform states, then only ';'
    closed, nxt = closed_states(table, CharSet.range("a", "z"))
    assert closed[0] and closed[nxt[0]] and closed[nxt[nxt[0]]] and nxt[nxt[nxt[0]]] == -1

    table = _table(".*foo")  # 'f' goes elsewhere: not uniform
    closed, nxt = closed_states(table, CharSet.any(dotall=False))
    assert not closed[0] and nxt[0] == -1


def test_candidates_are_read_from_the_automaton():
    found = candidate_classes(_table('"[^"\\n]*"'))
    assert CharSet(((0, 9), (11, 0x21), (0x23, 0x10FFFF))) in found
    assert candidate_classes(_table("abc")) == []


PATTERNS = [
    '"[^"]*"',  # a loop
    '"[^"\\n]{0,3}"',  # a bounded chain: tokens longer than the room left are refused
    # uniform at the start but not closed (next only 'a'): wild tokens spelled in
    # bytes there, while the quoted loop makes [^"] a wildcard class
    '[^"]a|"[^"]*"',
    "[a-z]*x[a-z]*",  # 'x' is not like the other letters: not uniform
    '(x[^"]|[^"]y)*',  # two uniform phases alternating with non-uniform ones
    "[^a]*|[^b]*",  # overlapping classes
    '(中|[^"])+',
    "[a-z]+( [a-z]+)*",  # " ax": a space, then letters — spelled by first character
    '( ?"[a-z]*")+',
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_masks_equal_the_oracles_on_tricky_tokens(vocab, pattern):
    spec = ca.Regex(pattern)
    oracle = ca.get("naive").compile(spec, vocab)
    compiled = ca.get("fst").compile(spec, vocab)
    rng = random.Random(pattern)
    for _ in range(40):
        path = paths.random_path(oracle, rng, 8)
        mine, theirs = compiled.checker(), oracle.checker()
        for step in range(len(path) + 1):
            assert mine.mask() == theirs.mask(), (pattern, path[:step])
            if step < len(path):
                mine.update([path[step]])
                theirs.update([path[step]])


def test_tokens_starting_outside_the_class_use_the_head_spelling(vocab):
    compiled = ca.get("fst").compile(ca.Regex("[a-z]+( [a-z]+)*"), vocab)
    assert compiled.wild.heads, "no group spelled by first character"
    checker = compiled.checker()
    for token in ("ax", " ax", " x", "xx", " ax"):
        assert checker.accepts(TOKENS.index(token)), token
        checker.update([TOKENS.index(token)])
    assert checker.is_accepting() and not checker.accepts(TOKENS.index("  x"))


def test_wildcards_are_used_and_change_the_automaton(vocab):
    spec = ca.Regex('"[^"]*"')
    wild = ca.get("fst").compile(spec, vocab)
    plain = ca.get("fst", wildcards=False).compile(spec, vocab)
    assert wild.stats.extra["wildcard_classes"] == 1
    assert plain.stats.extra["wildcard_classes"] == 0

    def arcs(c):
        return sum(1 for s in c.automaton.states() for _ in c.automaton.arcs(s))

    assert arcs(wild) < arcs(plain)
    checker = wild.checker()
    for token in ('"', "xxx", "中x", "é", '"'):  # wild tokens follow their group's arc
        assert checker.accepts(TOKENS.index(token)), token
        checker.update([TOKENS.index(token)])
    assert checker.is_accepting()
    assert not checker.accepts(TOKENS.index("x"))


@pytest.mark.parametrize("pattern", ['"[^"\\n]{0,5}"', "(ab|c)*d", "a", "[a-z]+( [a-z]+)*"])
def test_arc_arrays_read_every_arc_of_the_binary_format(pattern):
    fst = prefix_acceptor(parse_regex(pattern))
    expected = sorted((s, arc.ilabel, arc.nextstate) for s in fst.states() for arc in fst.arcs(s))
    got = sorted(zip(*(a.tolist() for a in arc_arrays(fst)), strict=True))
    assert got == expected and got
    assert _parse_vector(fst.write_to_string()) is not None  # not the fallback
    # an FST with symbol tables is not the plain layout: the iterator reads it
    fst.set_input_symbols(pynini.SymbolTable())
    assert _parse_vector(fst.write_to_string()) is None
    assert sorted(zip(*(a.tolist() for a in arc_arrays(fst)), strict=True)) == expected


def test_a_closed_state_reads_wild_tokens_by_wildcards_only(vocab):
    # Inside the quotes every state is closed for [^"]: wild tokens follow
    # their (class, length) group and nothing else — no byte spelling, no
    # head spelling (each would add arcs per token or per first character).
    compiled = ca.get("fst").compile(ca.Regex('"[^"]*"'), vocab)
    checker = compiled.checker()
    checker.update([TOKENS.index('"')])
    info = compiled.state(checker.state)
    assert info.groups and not info.heads
    wild = {i for i in range(len(TOKENS)) if compiled.wild.chars[0][i]}
    assert not wild & set(info.moves)
    assert {TOKENS.index(t) for t in ("xxx", "中x", "é")} <= set(
        checker.mask().allowed_ids().tolist()
    )
