"""Regex, Choice and Where masks of the naive backend against brute force."""

from __future__ import annotations

import re

import pytest
from brute import (
    allowed,
    assert_masks_match,
    make_vocab,
    prefix_set,
    regex_viable,
    strings_over,
)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import constrain_api as ca

ALPHABET = "ab-é中"


@pytest.fixture(scope="module")
def vocab():
    # Tokens up to 2 characters, split UTF-8 characters, and a few long ones.
    return make_vocab(ALPHABET, 2, extra=(b"aba", "é中".encode()[1:], b"-a-"))


def expectation(language: set[str], vocab: ca.Vocabulary):
    """Brute-force expectation function over a sampled language."""
    prefixes = prefix_set(language)
    encoded = {s.encode() for s in language}
    normal = [i for i in range(vocab.size) if not vocab.is_special(i)]
    tokens = [vocab.token_bytes(i) for i in range(vocab.size)]

    def expected(text: bytes):
        return allowed(tokens, normal, text, prefixes), text in encoded

    return expected


# (pattern, c, depth): every viable non-empty prefix completes within c more
# characters (the rest of a split character included); paths of depth tokens.
CASES = [
    (r"(ab)+", 2, 3),
    (r"a*b?", 2, 3),
    (r"[^a]{1,3}", 2, 2),  # a negated class: any character but "a", as UTF-8 only
    (r".-.", 3, 3),
    (r"(a|é)中?b", 2, 3),
    (r"a{2,3}|b-", 2, 3),
    (r"(?:[ab]|中)+?-", 2, 3),  # lazy = greedy for languages
]


def viability_expectation(pattern: str, vocab: ca.Vocabulary, completion: int):
    """Expected masks decided by Python's ``re`` on completions (no length cap on the text)."""
    normal = [i for i in range(vocab.size) if not vocab.is_special(i)]
    compiled = re.compile(pattern)

    def expected(text: bytes):
        ok = {
            i
            for i in normal
            if regex_viable(pattern, text + vocab.token_bytes(i), ALPHABET, completion)
        }
        try:
            accepting = compiled.fullmatch(text.decode()) is not None
        except UnicodeDecodeError:
            accepting = False
        return ok, accepting

    return expected


@pytest.mark.parametrize(("pattern", "completion", "depth"), CASES)
def test_regex_masks_equal_brute_force_on_every_path(naive, vocab, pattern, completion, depth):
    compiled = naive.compile(ca.Regex(pattern), vocab)
    expected = viability_expectation(pattern, vocab, completion)
    checked = assert_masks_match(compiled, expected, depth=depth)
    assert checked > 3


def test_negated_class_never_allows_invalid_utf8(naive):
    # Tokens: a lone continuation byte, a lone lead byte, a full character.
    vocab = ca.Vocabulary.from_list([b"<eos>", b"\x80", b"\xc3", b"\xa9", b"x", b"\xff"], eos=0)
    checker = naive.compile(ca.Regex(r"[^a]"), vocab).checker()
    assert set(checker.mask()) == {2, 4}  # \xc3 may start é; \x80 and \xff never start a character
    checker.update([2])
    assert set(checker.mask()) == {1, 3}  # continuation bytes: \xc3\x80 is "À", \xc3\xa9 "é"
    checker.update([3])
    assert set(checker.mask()) == {0}


def test_date_time_regex_masks_by_hand(naive):
    pattern = r"\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-5]\d([+-][0-2]\d:[0-5]\d|Z)"
    tokens = [b"<eos>", b"2024", b"-", b"0", b"1", b"12", b"-3", b"T", b"Z", b"9", b":", b"+"]
    vocab = ca.Vocabulary.from_list(tokens, eos=0)
    ids = {t: i for i, t in enumerate(tokens)}
    checker = naive.compile(ca.Regex(pattern), vocab).checker()
    # (token to feed, the tokens allowed before feeding it), worked out by hand
    steps = [
        (b"2024", {b"2024", b"0", b"1", b"12", b"9"}),
        (b"-", {b"-"}),  # "-3": the month cannot start with 3
        (b"12", {b"0", b"1", b"12"}),
        (b"-3", {b"-", b"-3"}),
        (b"0", {b"0", b"1", b"9"}),  # day [0-3]\d: 30, 31 and 39 ("12" would be 312)
        (b"T", {b"T"}),
        (b"12", {b"0", b"1", b"12"}),  # "9": no hour 9x
        (b":", {b":"}),
        (b"0", {b"0", b"1", b"12"}),  # minutes [0-5]
        (b"9", {b"0", b"1", b"9"}),
        (b":", {b":"}),
        (b"0", {b"0", b"1", b"12"}),
        (b"9", {b"0", b"1", b"9"}),
        (b"Z", {b"Z", b"+", b"-"}),
    ]
    for token, expected in steps:
        assert set(checker.mask()) == {ids[t] for t in expected}, token
        checker.update([ids[token]])
    assert checker.is_accepting() and set(checker.mask()) == {0}
    assert checker.is_finished()
    assert re.fullmatch(pattern, "2024-12-30T12:09:09Z")


def test_choice_masks(naive, vocab):
    options = ["ab", "aba-", "中", "é", ""]
    compiled = naive.compile(ca.Choice(options), vocab)
    checked = assert_masks_match(compiled, expectation(set(options), vocab), depth=4)
    assert checked > 5
    assert compiled.checker().is_accepting()  # "" is an option


@pytest.mark.parametrize(
    "predicate",
    [
        'stops_at(x, "-")',
        '"ab" in x and len(x) <= 4',
        'not "b" in x and len(words(x)) <= 2',
        'x in ["ab", "a-b"] or len(x) < 2',
        "len(x) == 3",
    ],
)
def test_where_masks_equal_brute_force(naive, predicate):
    alphabet = "ab- é"
    vocab = make_vocab(alphabet, 2)
    spec = ca.Where(predicate)
    language = {s for s in strings_over(alphabet, 7) if spec.holds(s)}
    compiled = naive.compile(spec, vocab)
    # Paths visit prefixes of <= 4 characters (2 tokens of <= 2), plus a token:
    # <= 6; each viable one completes within 7 characters for these predicates.
    assert assert_masks_match(compiled, expectation(language, vocab), depth=2) > 3


def test_rollback_fork_and_accepts_share_one_state_model(naive, vocab):
    compiled = naive.compile(ca.Regex(r"(ab)+"), vocab)
    ids = {vocab.token_bytes(i): i for i in range(vocab.size)}
    checker = compiled.checker()
    checker.update([ids[b"ab"], ids[b"a"]])
    twin = checker.fork()
    twin.update([ids[b"b"]])
    assert not checker.is_accepting() and twin.is_accepting()
    assert checker.validate([ids[b"b"], ids[b"ab"], 0]) == 3
    checker.rollback(1)
    assert checker.is_accepting()
    with pytest.raises(ca.TokenRejected):
        checker.update([ids[b"b"]])


# -- property test: random regexes and random vocabularies ------------------------

SMALL = "ab中"


def regexes(depth: int = 2):
    """(pattern, c): every viable prefix of the pattern completes within c characters."""
    atoms = st.sampled_from(
        [("a", 1), ("b", 1), ("中", 1), ("[ab]", 1), ("[^a]", 1), (".", 1), ("(?:ab)", 2)]
    )
    if depth == 0:
        return atoms
    sub = regexes(depth - 1)
    quantifiers = st.sampled_from([("*", 0), ("+", 1), ("?", 0), ("{1,2}", 1), ("{2}", 2)])
    return st.one_of(
        atoms,
        st.tuples(sub, sub).map(lambda p: (p[0][0] + p[1][0], p[0][1] + p[1][1])),
        st.tuples(sub, sub).map(lambda p: (f"(?:{p[0][0]}|{p[1][0]})", max(p[0][1], p[1][1]))),
        # inside a repetition, finishing the current round costs c; m rounds at most m*c
        st.tuples(sub, quantifiers).map(
            lambda p: (f"(?:{p[0][0]}){p[1][0]}", p[0][1] * max(1, p[1][1]))
        ),
    )


token_bytes = st.lists(
    st.text(alphabet=SMALL, min_size=1, max_size=3)
    .map(str.encode)
    .flatmap(lambda b: st.integers(1, len(b)).map(lambda k: b[:k])),
    min_size=1,
    max_size=10,
    unique=True,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regexes(), token_bytes, st.lists(st.integers(0, 20), max_size=4))
def test_random_regex_masks_equal_brute_force(naive, case, toks, walk):
    pattern, completion = case
    assume(completion <= 4)
    vocab = ca.Vocabulary.from_list([b"<eos>", *toks], eos=0)
    checker = naive.compile(ca.Regex(pattern), vocab).checker()
    compiled = re.compile(pattern)
    text = b""
    for step in [*walk, None]:
        want = {
            i
            for i in range(1, vocab.size)
            if regex_viable(pattern, text + vocab.token_bytes(i), SMALL, completion)
        }
        try:
            accepting = compiled.fullmatch(text.decode()) is not None
        except UnicodeDecodeError:
            accepting = False
        got = set(checker.mask().allowed_ids().tolist())
        assert got == want | ({0} if accepting else set()), (pattern, text)
        if not want or step is None:
            break
        choice = sorted(want)[step % len(want)]
        checker.update([choice])
        text += vocab.token_bytes(choice)
