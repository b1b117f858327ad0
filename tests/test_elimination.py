"""``dfa_to_regex``: the printed regex has exactly the automaton's language."""

from __future__ import annotations

import pytest

from constrain_api.automata import ByteDFA, dfa_to_regex, elimination
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


def _largest_weight(dfa: ByteDFA) -> int:
    """The least ``max_size`` the labelled elimination passes (bisection)."""
    edges = [elimination.char_edges(dfa, s) for s in range(dfa.num_states)]
    lo, hi = 0, 1
    while True:
        try:
            elimination._eliminate(dfa, edges, hi, build=True)
            break
        except CompileLimitExceeded:
            lo, hi = hi, hi * 2
    while lo + 1 < hi:  # passes at hi, fails at lo
        mid = (lo + hi) // 2
        try:
            elimination._eliminate(dfa, edges, mid, build=True)
            hi = mid
        except CompileLimitExceeded:
            lo = mid
    return hi


@pytest.mark.parametrize(
    "pattern", [*PATTERNS, "(a|b)*a(a|b){6}", "[a-c]*(abc|bca)[a-c]{3}", "(x[0-9]{1,3}y)*z"]
)
def test_the_weights_alone_fail_exactly_where_the_labels_do(pattern):
    """Past ``WEIGH_FIRST`` states the elimination is weighed before its AST
    is built: the weights must pass and fail at the same ``max_size`` as the
    labelled run (a weight counted differently moves the bound)."""
    dfa = ByteDFA.from_regex(pattern).minimize()
    edges = [elimination.char_edges(dfa, s) for s in range(dfa.num_states)]
    bound = _largest_weight(dfa)
    elimination._eliminate(dfa, edges, bound, build=False)  # passes
    with pytest.raises(CompileLimitExceeded) as labelled:
        elimination._eliminate(dfa, edges, bound - 1, build=True)
    with pytest.raises(CompileLimitExceeded) as weighed:
        elimination._eliminate(dfa, edges, bound - 1, build=False)
    assert str(weighed.value) == str(labelled.value)


def test_weighing_first_changes_no_result(monkeypatch):
    """dfa_to_node weighed first or not: the same AST, the same refusal."""
    big = ByteDFA.from_regex("(a|b)*a(a|b){6}")
    assert big.minimize().num_states >= elimination.WEIGH_FIRST  # (the default path weighs it)
    for pattern in [*PATTERNS, "(a|b)*a(a|b){6}"]:
        dfa = ByteDFA.from_regex(pattern)
        outcomes = []
        for first in (0, 10**9):
            monkeypatch.setattr(elimination, "WEIGH_FIRST", first)
            try:
                outcomes.append(elimination.dfa_to_node(dfa, max_size=400))
            except CompileLimitExceeded as e:
                outcomes.append(str(e))
        assert outcomes[0] == outcomes[1], pattern
    assert isinstance(outcomes[0], str)  # (the last one is refused at 400)
