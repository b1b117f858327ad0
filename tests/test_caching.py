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
    ca.lower(ca.Grammar('start: "a"+'))
    caches = ca.core_caches()
    assert set(SPEC_CACHES) <= set(caches) and "regex automata" in caches
    assert caches["lark grammar readings"].entries >= 1
    assert caches["regex automata"].entries >= 1 and caches["regex automata"].nbytes > 0
    assert caches["lowered specs"].entries >= 1
    ca.clear_caches(*SPEC_CACHES)
    caches = ca.core_caches()
    assert all(caches[name].entries == 0 for name in SPEC_CACHES)
    assert caches["lark grammar readings"].entries == 0  # keyed by a whole grammar text
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


def test_a_grammar_is_read_once_for_validation_and_lowering():
    ca.clear_caches()
    text = 'start: "x" NUMBER\n%import common.NUMBER\n'
    ir = ca.lower(ca.Grammar(text)).ir
    caches = ca.core_caches()
    assert caches["lark grammar readings"].misses == 1
    assert caches["lark grammar compilations"].hits >= 1  # lowering reused validation's
    assert caches["lark grammars"].entries == 0  # lark's loader was not needed
    assert set(ir.terminals) >= {"NUMBER"}


def test_a_grammar_left_to_lark_is_loaded_once_for_validation_and_lowering():
    ca.clear_caches()
    text = 'start: pair{"x", NUMBER}\npair{a, b}: a b\n%import common.NUMBER\n'  # a template
    ir = ca.lower(ca.Grammar(text)).ir
    caches = ca.core_caches()
    assert caches["lark grammars"].misses == caches["lark grammars"].entries == 1
    assert caches["compiled lark grammars"].hits >= 1  # lowering reused validation's
    assert set(ir.terminals) >= {"NUMBER"}


def test_a_byte_budget_evicts_the_least_recent_and_skips_the_oversized():
    cache: ca.ContentCache[int] = ca.ContentCache(10, sizeof=lambda v: v, max_bytes=100)
    cache.put("a", 40)
    cache.put("b", 40)
    cache.get("a")  # now the most recent: "b" goes first
    cache.put("c", 40)
    assert "a" in cache and "c" in cache and "b" not in cache
    assert cache.put("huge", 101) == 101 and "huge" not in cache  # returned, not kept
    assert "a" in cache and "c" in cache  # and nothing was evicted for it
    cache.clear()
    cache.put("d", 100)
    assert "d" in cache
    with pytest.raises(ValueError):
        ca.ContentCache(1, max_bytes=-1)


def test_the_regex_automata_cache_is_bounded_in_bytes():
    info = ca.core_caches()["regex automata"]
    assert info.maxsize == 1024
    ca.clear_caches()
    for n in range(30):
        ca.ByteDFA.from_regex(f"[a-z]{{{n}}}x")
    info = ca.core_caches()["regex automata"]
    assert info.entries == 30 and 0 < info.nbytes <= 256 << 20


def test_the_spec_caches_keep_the_lowered_forms_of_a_few_specs_only():
    """A process that compiles a new schema per request keeps the lowered
    forms (graphs of Python objects, which every full garbage collection
    walks) of its last ``SPEC_GRAPHS`` specs, not of hundreds: the first
    one's language is gone once as many others were lowered after it."""
    import gc
    import weakref

    from constrain_api.caching import SPEC_GRAPHS
    from constrain_api.lowering import lower

    def schema(i: int) -> ca.JsonSchema:
        return ca.JsonSchema({"type": "object", "properties": {f"p{i}": {"type": "integer"}}})

    first = weakref.ref(lower(schema(0)))
    for i in range(1, SPEC_GRAPHS + 1):
        lower(schema(i))
    gc.collect()
    assert first() is None
    assert ca.core_caches()["lowered specs"].entries == SPEC_GRAPHS
    assert ca.core_caches()["lowered json schemas"].entries <= SPEC_GRAPHS


def test_the_any_value_rules_are_made_once_and_shared_across_schemas():
    """Every schema with an unconstrained value or an open object has the
    rules of any JSON value: made once per whitespace setting (a core
    cache, not a spec cache: a new schema reuses them), the same objects
    in every lowering (their ASTs composed once), and the lowered grammar
    is the one a fresh build gives."""
    from constrain_api.jsonschema import _lowered, lower_json_schema_ir

    def open_object(name: str, **options) -> ca.JsonSchema:
        return ca.JsonSchema({"type": "object", "properties": {name: {}}}, **options)

    names = ("json_value", "json_object", "json_array")
    ca.clear_caches()
    first = _lowered(open_object("a"))
    grammar = lower_json_schema_ir(open_object("a"))
    assert ca.core_caches()["json any-value rules"].entries == 1
    ca.clear_caches(*SPEC_CACHES)
    second = _lowered(open_object("b"))
    assert ca.core_caches()["json any-value rules"].entries == 1  # reused by a new schema
    assert all(second[name] is first[name] for name in names)
    flexible = _lowered(open_object("b", whitespace="flexible"))
    assert ca.core_caches()["json any-value rules"].entries == 2  # keyed by the whitespace
    assert flexible["json_object"] != first["json_object"]
    ca.clear_caches()
    assert lower_json_schema_ir(open_object("a")) == grammar
