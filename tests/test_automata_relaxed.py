"""``LazyDFA.relaxed``: a state with the counts no ``width`` bytes can
exhaust lifted reads every string of at most ``width`` bytes as the state
does (what a subterminal tree, which reads one token's bytes, depends on),
and the states inside a long counted string become one."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from constrain_api import LazyDFA, parse_regex


def _states(dfa: LazyDFA, alphabet: bytes, depth: int) -> list[int]:
    """The states reached by strings of at most ``depth`` bytes of ``alphabet``."""
    seen, frontier = {dfa.start}, [dfa.start]
    for _ in range(depth):
        reached = {dfa.step(q, b) for q in frontier for b in alphabet} - seen - {-1}
        seen |= reached
        frontier = sorted(reached)
    return sorted(seen)


def _reads_alike(dfa: LazyDFA, q: int, r: int, alphabet: bytes, width: int) -> None:
    """``q`` and ``r`` agree on every string of at most ``width`` bytes of
    ``alphabet``: alive after the same ones, accepting after the same ones."""
    for n in range(width + 1):
        for word in itertools.product(alphabet, repeat=n):
            a, b = dfa.run(bytes(word), q), dfa.run(bytes(word), r)
            assert (a >= 0) == (b >= 0), (bytes(word), q, r)
            if a >= 0:
                assert dfa.accept[a] == dfa.accept[b], (bytes(word), q, r)


PATTERNS = [
    r'"[a-z]{0,50}"',
    r'"[a-z]{3,50}"',  # the minimum still counts within the window
    r"a{20,}b",
    r"(?:ab){0,30}c",
    r'"(?:[a-z]|\\n){0,60}"',  # inside an escape the count comes second
    r"[ab]{2,40}[ab]{0,30}",
    r"(?:a|bc){0,25}d",
    r"(?:(?:ab){0,20}c){0,20}",
    r"a{5}b{0,3}",  # counts within the window: nothing to lift
    r'"(?:[^"\\]|\\["\\])*"',
]


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("width", [2, 4])
def test_a_relaxed_state_reads_short_strings_alike(pattern, width):
    dfa = LazyDFA(parse_regex(pattern))
    alphabet = bytes(sorted(set(b'ab"cdn\\z') & set(range(128))))
    for q in _states(dfa, alphabet, 12):
        _reads_alike(dfa, q, dfa.relaxed(q, width), alphabet, width)


def test_the_states_inside_a_long_count_become_one():
    dfa = LazyDFA(parse_regex(r'"[a-z]{0,50}"'))
    inside = [dfa.run(b'"' + b"a" * n) for n in range(50)]
    assert len(set(inside)) == 50  # one state per count
    width = 8
    relaxed = {dfa.relaxed(q, width) for q in inside[: 50 - width]}
    assert len(relaxed) == 1  # the counts a token of 8 bytes cannot exhaust
    (r,) = relaxed
    assert dfa.step(r, ord("a")) == r  # a letter leaves it as it is
    assert dfa.run(b'"', r) >= 0 and dfa.accept[dfa.run(b'"', r)]
    # near the end, the count is within reach: each state is its own
    tail = inside[50 - width + 1 :]
    assert [dfa.relaxed(q, width) for q in tail] == tail
    # a minimum beyond the window is lifted to one past it
    low = LazyDFA(parse_regex(r"a{30,40}b"))
    q = low.run(b"a")
    assert low.relaxed(q, 4) != q
    _reads_alike(low, q, low.relaxed(q, 4), b"ab", 4)
    assert low.relaxed(q, 4) == low.relaxed(low.run(b"aa"), 4)


def test_states_whose_strings_depend_on_what_lies_beyond_are_their_own():
    # shortest matches: whether a string is one depends on the strings after it
    shortest = LazyDFA(parse_regex(r'"[a-z]{0,50}"'), shortest=True)
    q = shortest.run(b'"ab')
    assert shortest.relaxed(q, 4) == q
    # a start state made apart from the empty string does not take it back
    apart = LazyDFA(parse_regex(r"a{0,50}"), without_empty=True)
    r = apart.relaxed(apart.start, 4)
    assert not apart.accept[r]
    _reads_alike(apart, apart.start, r, b"ab", 4)


ATOMS = ["a", "b", "[ab]", "(?:ab|b)", '"', "(?:a|bb)"]


@st.composite
def counted_patterns(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        atom = draw(st.sampled_from(ATOMS))
        lo = draw(st.integers(0, 12))
        hi = draw(st.one_of(st.none(), st.integers(lo, 30)))
        parts.append(f"{atom}{{{lo},{'' if hi is None else hi}}}")
    return "".join(parts)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=counted_patterns(), width=st.integers(1, 4))
def test_relaxed_states_of_random_counted_patterns(pattern, width):
    dfa = LazyDFA(parse_regex(pattern))
    if dfa.is_empty():
        return
    for q in _states(dfa, b'ab"', 8):
        _reads_alike(dfa, q, dfa.relaxed(q, width), b'ab"', width)
