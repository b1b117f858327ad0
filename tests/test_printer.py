"""constrain_api.automata.to_regex: AST → portable regex text, same language."""

from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constrain_api.automata import (
    Alt,
    ByteDFA,
    CharSet,
    Difference,
    Empty,
    Intersect,
    Literal,
    Node,
    Repeat,
    Seq,
    alt,
    parse_regex,
    repeat,
    seq,
    to_regex,
)
from constrain_api.automata.printer import NOTHING_TEXT
from constrain_api.errors import UnsupportedConstraint

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

PATTERNS = [
    "",
    "a",
    "abc",
    "a|b",
    "ab|cd|",
    "(?:ab|)",
    "(a|bc|)+",
    "x(?:a|b|cd)*y",
    r"\d",
    r"\D+",
    r"\w+@\S",
    r"\s*",
    r"(?a)\w{2,5}",
    ".",
    "(?s).",
    "[^a]",
    "[^\n]",
    "[a-z0-9_]",
    "[^a-zA-Z]+",
    r"[\-\]\[\\^&~|]+",
    r"[!-\-]",
    r"\.\^\$\*\+\?\{\}\[\]\(\)\|\\",
    r"\x00\x01\x1f\x7f\n\t\r",
    "[\x00-\x1f\x7f]",
    "é|ü+|中文|😀{2}",
    "[\u00e0-\u00ff\U0001f600-\U0001f64f]",
    "[\ud7ff\ue000]",  # the surrogate gap between them
    "[^\x00-\U0010ffff]",
    "a[^\x00-\U0010ffff]|b",
    "(?:[^\x00-\U0010ffff])*c",
    "a{3}",
    "a{2,}",
    "a{0,4}",
    "(?:ab){2,3}",
    "(?:a*)*",
    "(?:a+|b?)+c",
    "((a{2}){3}){0,2}",
    "(?:a?){3}",
    "(?i)straße",
    "(?i)[a-f]+K",
    r"\u2028|\u2029|\x85",
    " # -/ ",
    "(?:)",
    "(?:|a)b",
]


def same_language(a: Node, b: Node) -> bool:
    return a == b or ByteDFA.from_node(a).same_language(ByteDFA.from_node(b))


def check_portable(text: str) -> None:
    """The dialect's promises: re compiles it without warnings; no forbidden constructs."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        re.compile(text)
    if text == NOTHING_TEXT:
        return
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            e = text[i + 1]
            assert not e.isalnum() or e == "x", text
            i += 4 if e == "x" else 2
            continue
        if c == "(":
            assert text.startswith("(?:", i), f"only non-capturing groups: {text!r}"
        assert c not in "^$" or (c == "^" and text[i - 1] == "["), text
        assert not (ord(c) < 0x20 or ord(c) == 0x7F), f"raw control in {text!r}"
        i += 1


@pytest.mark.parametrize("pattern", PATTERNS)
def test_round_trip(pattern: str) -> None:
    node = parse_regex(pattern)
    text = to_regex(node)
    check_portable(text)
    assert same_language(parse_regex(text), node), (pattern, text)


@pytest.mark.parametrize("pattern", ["a", "abc", "[a-z]+", "x{2,5}", "(?:ab)*c", "[^a]", r"\d"])
def test_simple_trees_print_to_equal_trees(pattern: str) -> None:
    node = parse_regex(pattern)
    assert parse_regex(to_regex(node)) == node


def test_texts_are_self_contained() -> None:
    # an alternation is grouped, so concatenation and quantification stay correct
    a = to_regex(parse_regex("ab|c"))
    b = to_regex(parse_regex("d|e+"))
    assert a.startswith("(?:")
    joined = parse_regex(a + b)
    assert same_language(joined, parse_regex("(?:ab|c)(?:d|e+)"))
    assert same_language(parse_regex(f"(?:{a})*"), parse_regex("(?:ab|c)*"))


def test_nothing_and_empty() -> None:
    assert to_regex(CharSet(())) == NOTHING_TEXT
    assert to_regex(seq(Literal("a"), CharSet(()))) == NOTHING_TEXT
    assert to_regex(Repeat(CharSet(()), 0, None)) == ""
    assert to_regex(Repeat(CharSet(()), 1, None)) == NOTHING_TEXT
    assert to_regex(Empty()) == ""
    assert to_regex(alt(Literal("a"), CharSet(()))) == "a"
    assert ByteDFA.from_regex(NOTHING_TEXT).is_empty()
    assert re.fullmatch(NOTHING_TEXT, "x") is None


def test_full_set_and_negation() -> None:
    assert to_regex(CharSet.any()) == "[\\x00-\U0010ffff]"
    # the negated form is read without the surrogates, so it prints the same set
    cs = CharSet.of("a").complement()
    assert to_regex(cs) == "[^a]"
    assert parse_regex("[^a]") == cs
    assert to_regex(CharSet.any(dotall=False)) == "[^\\x0a]"


def test_lookaround_nodes_are_unsupported() -> None:
    for node in (parse_regex("[a-c](?=b)[a-z]"), parse_regex("(?!ab)[a-z]{2}")):
        assert "Intersect" in repr(node) or "Difference" in repr(node)
        with pytest.raises(UnsupportedConstraint) as e:
            to_regex(node)
        assert e.value.construct == "lookaround"
    with pytest.raises(UnsupportedConstraint):
        to_regex(Intersect(Literal("a"), Literal("a")))
    with pytest.raises(UnsupportedConstraint):
        to_regex(alt(Literal("x"), Difference(Literal("a"), Literal("b"))))


def test_agrees_with_python_re() -> None:
    texts = ["", "a", "ab", "abab", "é", "😀😀", "\n", "x\x7f", "a-b", "]", "^", "\\"]
    for pattern in PATTERNS:
        text = to_regex(parse_regex(pattern))
        original = re.compile(pattern)
        printed = re.compile(text)
        for s in texts:
            assert bool(original.fullmatch(s)) == bool(printed.fullmatch(s)), (pattern, text, s)


def test_deep_nesting_is_a_limit() -> None:
    node: Node = Literal("a")
    for i in range(5000):
        node = Seq((Alt((node, Literal("b" if i % 2 else "c"))), Literal("d")))
    from constrain_api.errors import CompileLimitExceeded

    with pytest.raises(CompileLimitExceeded):
        to_regex(node)


# --------------------------------------------------------------- hypothesis

ALPHABET = ["a", "b", "-", "]", "^", "\\", "\n", "\x00", "\x7f", "é", "\ud7ff", "\ue000", "😀"]

charsets = st.lists(
    st.tuples(st.sampled_from(ALPHABET), st.sampled_from(ALPHABET)), min_size=0, max_size=3
).map(lambda pairs: CharSet(tuple(tuple(sorted((ord(x), ord(y)))) for x, y in pairs)))
negated = charsets.map(lambda cs: cs.complement())
literals = st.text(alphabet=st.sampled_from(ALPHABET[:10]), min_size=1, max_size=3).map(Literal)
leaves = st.one_of(charsets, negated, literals, st.just(Empty()))


def _extend(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    bounds = st.tuples(st.integers(0, 2), st.one_of(st.none(), st.integers(0, 3))).map(
        lambda t: (t[0], None if t[1] is None else max(t[0], t[1]))
    )
    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map(lambda xs: Seq(tuple(xs))),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: Alt(tuple(xs))),
        st.tuples(children, bounds).map(lambda t: Repeat(t[0], t[1][0], t[1][1])),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: seq(*xs)),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: alt(*xs)),
        st.tuples(children, bounds).map(lambda t: repeat(t[0], t[1][0], t[1][1])),
    )


trees = st.recursive(leaves, _extend, max_leaves=8)


@SETTINGS
@given(trees)
def test_random_trees_round_trip(node: Node) -> None:
    text = to_regex(node)
    check_portable(text)
    assert ByteDFA.from_regex(text).same_language(ByteDFA.from_node(node)), text


@SETTINGS
@given(trees, trees)
def test_random_texts_concatenate(a: Node, b: Node) -> None:
    text = to_regex(a) + to_regex(b)
    assert ByteDFA.from_regex(text).same_language(ByteDFA.from_node(Seq((a, b)))), text
    group = f"(?:{to_regex(a)})*"
    assert ByteDFA.from_regex(group).same_language(ByteDFA.from_node(Repeat(a, 0, None)))
