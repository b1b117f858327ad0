"""Wildcard terminals: the per-token character counts, the closed states, and
exact masks where wildcard and byte spellings meet (tokens half inside a
class, partial UTF-8, states where a class acts uniformly only for a while)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from constrain_conformance import paths
from constrain_fst.automata import prefix_acceptor
from constrain_fst.wildcards import (
    byte_table,
    candidate_classes,
    closed_chains,
    lead_chars,
    token_text,
    wild_chars,
)

import constrain_api as ca
from constrain_api.automata import CharSet, parse_regex

TOKENS = [
    "x", "a", "y", '"', "xa", "xy", "ax", "xx", "xxx", 'x"', '"x', "é", "xé", "éa",
    " ", " x", " ax", " xé", "  x", ' "x', " a\"",
    b"\xc3", b"\xa9", b"x\xc3", "\n", "x\ny", "中", "中x", 'é"', "中\n", 'xx"', "<eos>",
]  # fmt: skip


@pytest.fixture(scope="module")
def vocab() -> ca.Vocabulary:
    return ca.Vocabulary.from_list(TOKENS, eos="<eos>")


def _table(pattern: str) -> np.ndarray:
    return byte_table(prefix_acceptor(parse_regex(pattern)))[0]


def _start_table(pattern: str) -> tuple[np.ndarray, int]:
    acceptor = prefix_acceptor(parse_regex(pattern))
    return byte_table(acceptor)[0], acceptor.start()


def test_wild_chars_count_characters_of_tokens_wholly_in_the_class(vocab):
    quote = CharSet(((0, 0x21), (0x23, 0x10FFFF)))  # [^"]
    chars, tails = wild_chars(token_text(vocab), quote)
    leads = lead_chars(token_text(vocab), quote)
    count = {TOKENS[i]: int(chars[i]) for i in range(len(TOKENS))}
    assert count["xxx"] == 3 and count["xé"] == 2 and count["中x"] == 2 and count["\n"] == 1
    # a quote, partial UTF-8 and the special token are never wild
    for t in ('"', 'x"', '"x', b"\xc3", b"\xa9", b"x\xc3", "<eos>"):
        assert count[t] == 0, t
    # headed: any first character, the rest (at least one) inside; wild tokens too
    tail = {TOKENS[i]: int(tails[i]) for i in range(len(TOKENS))}
    assert tail['"x'] == 1 and tail['"'] == 0 and tail['x"'] == 0 and tail["xxx"] == 2
    assert tail["x"] == 0 and tail["中x"] == 1 and tail[b"x\xc3"] == 0
    # leading characters inside, then one outside: not for wild or invalid tokens
    lead = {TOKENS[i]: int(leads[i]) for i in range(len(TOKENS))}
    assert lead['x"'] == 1 and lead[' a"'] == 2 and lead['"x'] == 0 and lead['"'] == 0
    assert lead["xxx"] == 0 and lead[b"x\xc3"] == 0
    chars, tails = wild_chars(token_text(vocab), CharSet.range("a", "z"))
    leads = lead_chars(token_text(vocab), CharSet.range("a", "z"))
    assert int(leads[TOKENS.index("xé")]) == 1 and int(leads[TOKENS.index("x\ny")]) == 1
    assert int(chars[TOKENS.index("xé")]) == 0 and int(chars[TOKENS.index("ax")]) == 2
    assert int(tails[TOKENS.index(" ax")]) == 2 and int(tails[TOKENS.index("éa")]) == 1
    assert int(tails[TOKENS.index(" xé")]) == 0 and int(tails[TOKENS.index("  x")]) == 0
    assert int(tails[TOKENS.index("ax")]) == 1  # wild, and headed by its first letter


@pytest.mark.parametrize(
    "ranges",
    [
        ((0, 0x21), (0x23, 0x10FFFF)),  # all non-ASCII: the table lookup
        ((0x61, 0x78),),  # [a-x], none: the table lookup
        ((0x20, 0x7E), (0xE9, 0xE9), (0x4E00, 0x9FFF)),  # some: the ranges search
    ],
)
def test_per_token_counts_match_a_character_by_character_reading(vocab, ranges):
    charset = CharSet(ranges)
    text = token_text(vocab)
    chars, tails = wild_chars(text, charset)
    leads = lead_chars(text, charset)
    for i, token in enumerate(TOKENS):
        inside = [c in charset for c in token] if isinstance(token, str) else []
        if token == "<eos>" or not inside:
            assert chars[i] == tails[i] == leads[i] == 0, token
            continue
        assert chars[i] == (len(inside) if all(inside) else 0), token
        assert tails[i] == (len(inside) - 1 if len(inside) > 1 and all(inside[1:]) else 0)
        n = inside.index(False) if False in inside else 0
        assert leads[i] == n, token


def test_closed_chains_follow_the_definition():
    table, q = _start_table('[^"]*"')  # the loop state: uniform, next = itself
    closed, _, nxt = closed_chains(table, CharSet(((0, 0x21), (0x23, 0x10FFFF))))
    assert closed[q] and nxt[q] == q
    # mid-character states: every character of the class dies there (closed, next -1)
    mid = table[q, 0xC3]
    assert closed[mid] and nxt[mid] == -1

    table, q = _start_table("[a-z]b")  # uniform at the start, but 'b' alone is allowed next
    closed, _, nxt = closed_chains(table, CharSet.range("a", "z"))
    assert nxt[q] >= 0 and not closed[q]

    table, q = _start_table("[a-z]{0,2};")  # a chain of uniform states, then only ';'
    closed, _, nxt = closed_chains(table, CharSet.range("a", "z"))
    assert closed[q] and closed[nxt[q]] and closed[nxt[nxt[q]]] and nxt[nxt[nxt[q]]] == -1

    table, q = _start_table(".*foo")  # 'f' goes elsewhere: not uniform
    closed, _, nxt = closed_chains(table, CharSet.any(dotall=False))
    assert not closed[q] and nxt[q] == -1


def test_candidates_are_read_from_the_automaton():
    found = candidate_classes(_table('"[^"\\n]*"'))
    assert CharSet(((0, 9), (11, 0x21), (0x23, 0x10FFFF))) in found
    assert candidate_classes(_table("abc")) == []


def _candidates_one_state_at_a_time(table, min_bytes):
    """``candidate_classes``' definition, read plainly (the function does all
    states at once)."""
    found = {}
    for q in range(table.shape[0]):
        row = table[q, :128]
        targets, counts = np.unique(row[row >= 0], return_counts=True)
        if not len(counts) or counts.max() < min_bytes:
            continue
        inside = row == targets[np.argmax(counts)]  # ties: the smallest target
        ranges, lo = [], None
        for b in range(129):
            if b < 128 and inside[b] and lo is None:
                lo = b
            elif (b == 128 or not inside[b]) and lo is not None:
                ranges.append((lo, b - 1))
                lo = None
        found.setdefault(CharSet(tuple(ranges)))
        if (table[q, 0xC2:0xF5] >= 0).all():
            found.setdefault(CharSet((*ranges, (0x80, 0x10FFFF))))
    return list(found)


@pytest.mark.parametrize("seed", range(40))
def test_candidates_follow_their_definition(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 30)), int(rng.integers(1, 6))
    table = rng.integers(-1, k, size=(n, 256)).astype(np.int32)
    if seed % 3 == 0:  # one target for most bytes, as under a wide class
        table[:, :128] = np.where(rng.random((n, 128)) < 0.7, 2, table[:, :128])
    if seed % 5 == 0:  # every lead byte alive
        table[:, 0xC2:0xF5] = 1
    for min_bytes in (1, 8, 40):
        expected = _candidates_one_state_at_a_time(table, min_bytes)
        assert candidate_classes(table, min_bytes) == expected


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
    '"[^"\n]*",?\n?',  # tokens ending in a quote or a newline: spelled by lead
    "[a-z]*\n[a-z]*",  # x\ny: a letter, then a newline and a letter
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


def test_tokens_leaving_a_class_are_read_by_lead_groups_where_it_is_closed(vocab):
    # Inside the quotes, x" and é" (class characters, then a quote) are read by
    # one group per (leading characters, rest) — not token by token in bytes,
    # which walked the trie of every such token from every state inside.
    compiled = ca.get("fst").compile(ca.Regex('"[^"\n]{0,4}"'), vocab)
    lead = {TOKENS.index(t) for t in ('x"', 'é"', ' a"', 'xx"')}
    assert all(compiled.wild.lead_group_of[0, t] for t in lead)
    checker = compiled.checker()
    checker.update([TOKENS.index('"')])
    info = compiled.state(checker.state)
    assert not lead & set(info.moves)
    same = compiled.wild.lead_group_of[0, TOKENS.index('x"')]
    assert same == compiled.wild.lead_group_of[0, TOKENS.index('é"')]  # one char, then "
    assert {same, compiled.wild.lead_group_of[0, TOKENS.index('xx"')]} <= set(info.member_moves)
    checker.update([TOKENS.index("xxx")])
    assert TOKENS.index('x"') in checker.mask() and TOKENS.index('xx"') not in checker.mask()
    checker.update([TOKENS.index('é"')])
    assert checker.mask().allowed_ids().tolist() == [TOKENS.index("<eos>")]


def test_wildcards_are_used_and_change_the_automaton(vocab):
    spec = ca.Regex('"[^"]*"')
    wild = ca.get("fst").compile(spec, vocab)
    plain = ca.get("fst", wildcards=False).compile(spec, vocab)
    assert wild.stats.extra["wildcard_classes"] == 1
    assert plain.stats.extra["wildcard_classes"] == 0

    assert wild.automaton.num_arcs() < plain.automaton.num_arcs()
    checker = wild.checker()
    for token in ('"', "xxx", "中x", "é", '"'):  # wild tokens follow their group's arc
        assert checker.accepts(TOKENS.index(token)), token
        checker.update([TOKENS.index(token)])
    assert checker.is_accepting()
    assert not checker.accepts(TOKENS.index("x"))


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


NAME_TOKENS = [
    "{", "}", '"', ":", ",", "1", "a", "b", "p", "x", "é", "ab", "ap", "api", "ax", "xa",
    "abx", "apix", "bp", "pi", 'ab"', 'a"', 'x"', 'api"', '":', '":1', '":"', '"x', '"a',
    '{"', '{"a', '{"ab', '"}', "1,", ',"', ',"ap', "aé", "é\"", " ", "\\", "<eos>",
]  # fmt: skip

#: Declared names inside "any other name": the trie of their first letters
#: is made of funnel states (every other character leads to one state).
NAME_SCHEMAS = [
    {  # "ab" holds a string, any other name an integer: a token ending the
        # name "ab" must follow the declared member, not the others
        "type": "object",
        "properties": {"ab": {"type": "string"}, "api": {"type": "integer"}},
        "additionalProperties": {"type": "integer"},
    },
    {
        "type": "object",
        "properties": {"a": {"const": 1}, "apix": {"type": "string"}, "bp": {"type": "string"}},
        "additionalProperties": {"type": "string", "maxLength": 3},
    },
]


@pytest.fixture(scope="module")
def name_vocab() -> ca.Vocabulary:
    return ca.Vocabulary.from_list(NAME_TOKENS, eos="<eos>")


@pytest.mark.parametrize("schema", NAME_SCHEMAS, ids=["string-or-integer", "bounded-others"])
def test_funnel_states_keep_masks_exact(name_vocab, schema):
    spec = ca.JsonSchema(schema)
    oracle = ca.get("naive").compile(spec, name_vocab)
    compiled = ca.get("fst").compile(spec, name_vocab)
    assert compiled.stats.extra["funnel_states"] > 0
    rng = random.Random(repr(schema))
    for _ in range(60):
        path = paths.random_path(oracle, rng, 10)
        mine, theirs = compiled.checker(), oracle.checker()
        for step in range(len(path) + 1):
            assert mine.mask() == theirs.mask(), path[:step]
            if step < len(path):
                mine.update([path[step]])
                theirs.update([path[step]])


def test_a_token_that_stays_among_declared_names_follows_its_own_arc(name_vocab):
    # After {", the token ab" ends the declared name "ab" (a string follows)
    # although the funnel group reads it as another name (an integer).
    compiled = ca.get("fst").compile(ca.JsonSchema(NAME_SCHEMAS[0]), name_vocab)
    ids = {t: i for i, t in enumerate(NAME_TOKENS)}
    checker = compiled.checker()
    checker.update([ids['{"']])
    info = compiled.state(checker.state)
    assert info.funnel_groups and ids["ab"] in info.moves and ids["xa"] not in info.moves
    for tokens in (["ab", '":'], ['ab"', ":"]):  # a wild token; one leaving the class
        declared = compiled.checker()
        declared.update([ids['{"'], *(ids[t] for t in tokens)])
        assert ids['"x'] in declared.mask() and ids["1"] not in declared.mask(), tokens
    other = compiled.checker()
    other.update([ids['{"'], ids["xa"], ids['":']])
    assert ids["1"] in other.mask() and ids['"x'] not in other.mask()
