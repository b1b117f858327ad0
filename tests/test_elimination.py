"""``dfa_to_regex``: the printed regex has exactly the automaton's language."""

from __future__ import annotations

import pytest

from constrain_api.automata import ByteDFA, dfa_to_regex
from constrain_api.errors import CompileLimitExceeded

PATTERNS = [
    "a",
    "ab|cd",
    "(ab)*c",
    "[a-z]+@[a-z]+\\.com",
    "é+|ü",
    '[^"]*',
    ".{2,4}",
    "(a|b)*a(a|b){3}",
    "[\u0100-\uffff]x|\U0001f600+",
    "[\u0800-\U0010ffff]{2}",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_round_trip_is_the_same_language(pattern):
    dfa = ByteDFA.from_regex(pattern)
    assert ByteDFA.from_regex(dfa_to_regex(dfa)).same_language(dfa)


def test_complement_within_json_strings():
    strings = ByteDFA.from_regex('"(?:[^"\\\\\\x00-\\x1f]|\\\\["\\\\bfnrt])*"')
    other = strings.difference(ByteDFA.from_regex('"[a-z_]+"'))
    text = dfa_to_regex(other)
    back = ByteDFA.from_regex(text)
    assert back.same_language(other)
    assert back.matches(b'"A"') and back.matches(b'""') and not back.matches(b'"ab"')


def test_empty_language_and_size_bound():
    assert not ByteDFA.from_regex(dfa_to_regex(ByteDFA.empty())).matches(b"")
    with pytest.raises(CompileLimitExceeded):
        dfa_to_regex(ByteDFA.from_regex("(a|b)*a(a|b){6}"), max_size=500)
