"""The core's process-wide caches: keyed by everything that changes the
result, listed, bounded, and emptied on demand."""

from __future__ import annotations

import pytest

import constrain_api as ca
from constrain_api.caching import SPEC_CACHES


def _same_language(a: ca.ByteDFA, b: ca.ByteDFA) -> bool:
    return a.difference(b).is_empty() and b.difference(a).is_empty()


def test_core_caches_are_listed_and_cleared():
    ca.ByteDFA.from_regex("[a-c]+x")
    ca.lower(ca.JsonSchema({"type": "integer"}))
    caches = ca.core_caches()
    assert set(SPEC_CACHES) <= set(caches) and "regex automata" in caches
    assert caches["regex automata"].entries >= 1 and caches["regex automata"].nbytes > 0
    assert caches["lowered specs"].entries >= 1
    ca.clear_caches(*SPEC_CACHES)
    caches = ca.core_caches()
    assert all(caches[name].entries == 0 for name in SPEC_CACHES)
    assert caches["regex automata"].entries >= 1  # parts shared across specs stay
    ca.clear_caches()
    assert all(info.entries == 0 for info in ca.core_caches().values())
    with pytest.raises(KeyError):
        ca.clear_caches("no such cache")


def test_a_cached_automaton_is_the_one_a_fresh_build_gives():
    ca.clear_caches()
    first = ca.ByteDFA.from_regex("(ab|a)*c")
    assert ca.ByteDFA.from_regex("(ab|a)*c") is first  # a hit
    ca.clear_caches()
    fresh = ca.ByteDFA.from_regex("(ab|a)*c")
    assert fresh is not first and _same_language(fresh, first)


def test_the_regex_cache_keys_every_argument():
    ca.clear_caches()
    # whole_text decides whether a lookahead at the end is allowed: a key
    # without it would hand the refused pattern the other one's automaton
    assert ca.ByteDFA.from_regex("a(?!b)", whole_text=True).num_states == 2
    with pytest.raises(ca.UnsupportedConstraint, match="lookahead"):
        ca.ByteDFA.from_regex("a(?!b)")
    # a bound that the cached automaton exceeds is still enforced
    big = ca.ByteDFA.from_regex("[0-9]{40}")
    assert big.num_states > 10
    with pytest.raises(ca.CompileLimitExceeded):
        ca.ByteDFA.from_regex("[0-9]{40}", max_states=10)


def test_a_grammar_is_loaded_once_for_validation_and_lowering():
    ca.clear_caches()
    text = 'start: "x" NUMBER\n%import common.NUMBER\n'
    ir = ca.lower(ca.Grammar(text)).ir
    assert ca.core_caches()["lark grammars"].misses == ca.core_caches()["lark grammars"].entries
    assert ca.core_caches()["compiled lark grammars"].hits >= 1  # lowering reused validation's
    assert set(ir.terminals) >= {"NUMBER"}
