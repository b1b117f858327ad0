"""constrain_api.lowering.dfa_for_predicate: the automaton accepts exactly what ``holds`` does."""

from __future__ import annotations

import itertools
import re
import time
from dataclasses import dataclass

import numpy as np
import pytest
from automata_support import shortest_completion
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constrain_api import where
from constrain_api.automata import ByteDFA
from constrain_api.errors import CompileLimitExceeded, UnsupportedConstraint
from constrain_api.lowering import dfa_for_predicate
from constrain_api.where import (
    And,
    Contains,
    LenChars,
    LenWords,
    NotContains,
    OneOf,
    Or,
    Predicate,
    StopsAt,
)

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CHARS = ["a", "b", " ", "é", "中"]
TEXT_CHARS = [*CHARS, "\n", "\u3000", "😀"]


def moore_blocks(dfa: ByteDFA) -> int:
    """Number of classes of equivalent states (Moore's refinement, computed naively)."""
    block = dfa.accepting.astype(np.int64)
    while True:
        sig = np.concatenate([block[:, None], np.append(block, -1)[dfa.table]], axis=1)
        new = np.unique(sig, axis=0, return_inverse=True)[1].reshape(-1)
        if len(set(new.tolist())) == len(set(block.tolist())):
            return len(set(new.tolist()))
        block = new


# ------------------------------------------------------------ strategies

needles = st.text(alphabet=st.sampled_from(CHARS), min_size=1, max_size=3)
ops = st.sampled_from(["<", "<=", "==", ">=", ">"])
leaves = st.one_of(
    needles.map(StopsAt),
    needles.map(Contains),
    needles.map(NotContains),
    st.lists(st.text(alphabet=st.sampled_from(CHARS), max_size=3), min_size=1, max_size=4).map(
        OneOf
    ),
    st.tuples(ops, st.integers(0, 5)).map(lambda t: LenChars(*t)),
    st.tuples(ops, st.integers(0, 4)).map(lambda t: LenWords(*t)),
)
predicates = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map(And),
        st.lists(inner, min_size=2, max_size=3).map(Or),
    ),
    max_leaves=5,
)
texts = st.text(alphabet=st.sampled_from(TEXT_CHARS), max_size=9)


@SETTINGS
@given(predicates, st.lists(texts, min_size=1, max_size=15))
def test_random_predicates_match_holds(p: Predicate, samples: list[str]) -> None:
    dfa = dfa_for_predicate(p)
    for text in samples:
        assert dfa.matches(text.encode()) == p.holds(text), (str(p), text)
    w = shortest_completion(dfa, dfa.start)
    assert (w is None) == dfa.is_empty()
    if w is not None:
        assert p.holds(w.decode())


@SETTINGS
@given(predicates, st.lists(texts, max_size=5))
def test_random_predicates_viability(p: Predicate, prefixes: list[str]) -> None:
    dfa = dfa_for_predicate(p)
    for prefix in prefixes:
        enc = prefix.encode()
        for cut in range(len(enc) + 1):
            part = enc[:cut]
            state = dfa.run(part)
            if state >= 0:
                # viable ⇒ the automaton names a completion and holds() confirms it
                rest = shortest_completion(dfa, state)
                assert rest is not None
                assert p.holds((part + rest).decode()), (str(p), part, rest)
        # a completion over the alphabet ⇒ viable
        for n in range(3):
            for t in itertools.product(CHARS, repeat=n):
                if p.holds(prefix + "".join(t)):
                    assert dfa.is_viable(enc), (str(p), prefix)
                    break


SMALL = ["a", "b", " ", "é"]
ALL_SHORT = ["".join(t) for n in range(6) for t in itertools.product(SMALL, repeat=n)]


@pytest.mark.parametrize(
    "source",
    [
        'stops_at(x, "aa")',
        'stops_at(x, "ab")',
        'stops_at(x, "a a")',
        'stops_at(x, "é")',
        'stops_at(x, "aba")',
        'stops_at(x, "aab")',
        'stops_at(x, "aaa")',
        '"aab" in x',
        '"a ab" not in x',
        '"ab" in x',
        '"aa" not in x',
        '"é " not in x',
        'x in ["a", "b é", ""]',
        "len(x) < 3",
        "len(x) == 0",
        "len(x) > 4",
        "len(x) <= 0",
        "len(words(x)) == 0",
        "len(words(x)) == 2",
        "len(words(x)) >= 2",
        "len(words(x)) < 2",
        "len(words(x)) > 1",
        '2 <= len(x) <= 4 and "a" in x',
        'stops_at(x, "b") or len(words(x)) == 1',
        '"a" not in x and "b" not in x and len(x) < 3',
        'not ("a" in x or len(x) > 2)',
    ],
)
def test_exhaustive_short_texts(source: str) -> None:
    p = where.parse(source)
    dfa = dfa_for_predicate(p)
    for text in ALL_SHORT:
        assert dfa.matches(text.encode()) == p.holds(text), (source, text)


ABE_TEXTS = ["".join(t) for n in range(7) for t in itertools.product("abé", repeat=n)]


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", "b", "é"]), min_size=1, max_size=5))
def test_containment_against_regex(needle: str) -> None:
    # an independent construction: the regex .*needle.* through the NFA pipeline
    contains = ByteDFA.from_regex(f"(?s).*{re.escape(needle)}.*")
    assert dfa_for_predicate(Contains(needle)).same_language(contains)
    stops = dfa_for_predicate(StopsAt(needle))
    absent = dfa_for_predicate(NotContains(needle))
    for text in ABE_TEXTS:
        enc = text.encode()
        assert stops.matches(enc) == StopsAt(needle).holds(text)
        assert absent.matches(enc) == (needle not in text)


def test_unicode_whitespace_words() -> None:
    p = LenWords("==", 2)
    dfa = dfa_for_predicate(p)
    for text in [
        "a\u3000b",
        "a\u2028b",
        "a\x1cb",
        " a\tb\n",
        "a\u00a0b",
        "a\u200bb",
        "a b c",
        "中\u1680é",
        "a\x85b",
        "a\u180eb",
    ]:
        assert dfa.matches(text.encode()) == p.holds(text) == (len(text.split()) == 2), text


def test_stops_at_first_occurrence() -> None:
    dfa = dfa_for_predicate(StopsAt("aa"))
    assert dfa.matches(b"aa") and dfa.matches(b"baa")
    assert not dfa.matches(b"aaa") and not dfa.matches(b"aab") and not dfa.matches(b"")
    assert not dfa.is_viable(b"aab")
    # byte-level matching of multi-byte needles is character-level matching
    d2 = dfa_for_predicate(StopsAt("é"))
    assert d2.matches("中é".encode()) and not d2.matches("éé".encode())
    assert not d2.matches(b"\xc3") and d2.is_viable(b"\xc3")


def test_invalid_utf8_never_accepted() -> None:
    for p in [NotContains("x"), LenChars("<=", 3), LenWords(">=", 0), Contains("a")]:
        dfa = dfa_for_predicate(p)
        for bad in [b"\x80", b"a\xc3", b"\xed\xa0\x80", b"\xff", b"a\xf4\x90\x80\x80"]:
            assert not dfa.matches(bad), (str(p), bad)


def test_surrogates() -> None:
    assert dfa_for_predicate(OneOf(("a", "\ud800"))).same_language(ByteDFA.literal(b"a"))
    assert dfa_for_predicate(Contains("\ud800")).is_empty()
    assert dfa_for_predicate(StopsAt("x\udfff")).is_empty()
    assert dfa_for_predicate(NotContains("\ud800")).same_language(ByteDFA.any_utf8())
    assert dfa_for_predicate(OneOf(("\ud800",))).is_empty()


@pytest.mark.parametrize("n", [100, 1000, 2000])
def test_large_char_bounds_are_linear(n: int) -> None:
    le = dfa_for_predicate(LenChars("<=", n))
    assert le.num_states <= 8 * (n + 1)
    assert le.matches(("中" * n).encode()) and not le.matches(("中" * (n + 1)).encode())
    assert le.matches(("😀" * n).encode()) and le.matches(b"")
    eq = dfa_for_predicate(LenChars("==", n))
    assert eq.matches(("é" * n).encode()) and not eq.matches(("é" * (n - 1)).encode())
    ge = dfa_for_predicate(LenChars(">=", n))
    assert ge.num_states <= 8 * (n + 1)
    assert ge.matches(("a" * n).encode()) and not ge.matches(("a" * (n - 1)).encode())


def test_large_word_bounds_are_linear() -> None:
    n = 500
    dfa = dfa_for_predicate(LenWords("<=", n))
    assert dfa.num_states <= 40 * (n + 1)
    assert dfa.matches(" ".join(["ab"] * n).encode())
    assert not dfa.matches(" ".join(["ab"] * (n + 1)).encode())
    assert dfa.matches(("  " + "\u3000".join(["é"] * n) + "\n").encode())


def test_state_limit() -> None:
    t0 = time.perf_counter()
    with pytest.raises(CompileLimitExceeded):
        dfa_for_predicate(LenChars("<=", 10**7))
    with pytest.raises(CompileLimitExceeded):
        dfa_for_predicate(LenWords("==", 10**6))
    with pytest.raises(CompileLimitExceeded):
        dfa_for_predicate(LenChars("<=", 50) & Contains("abc"), max_states=100)
    with pytest.raises(CompileLimitExceeded):
        dfa_for_predicate(StopsAt("a" * 200), max_states=100)
    assert time.perf_counter() - t0 < 5


@dataclass(frozen=True, slots=True)
class _Custom(Predicate):
    def holds(self, text: str) -> bool:
        return True

    def render(self, var: str = "x") -> str:
        return "custom"


def test_unknown_predicate_is_unsupported() -> None:
    with pytest.raises(UnsupportedConstraint) as info:
        dfa_for_predicate(_Custom())
    assert "_Custom" in info.value.construct


def test_results_are_minimal() -> None:
    for p in [
        StopsAt("abab"),
        Contains("aa"),
        NotContains("ab"),
        LenWords("==", 3),
        LenChars("<", 4) | Contains("é"),
    ]:
        d = dfa_for_predicate(p)
        assert d.minimize() is d
        assert moore_blocks(d) == d.num_states
