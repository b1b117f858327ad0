"""Errors of the naive backend: named constructs, bounds, unsupported kinds."""

from __future__ import annotations

import pytest

import constrain_api as ca


@pytest.fixture(scope="module")
def vocab():
    return ca.Vocabulary.from_list([b"<eos>", b"a", b"b"], eos=0)


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        (r"(a)\1", "backreference"),
        (r"a(?=b)", "lookahead at the end"),
        (r"(?<=a)b", "lookbehind at the start"),
        (r"a\b", "word boundary"),
        (r"a*+", "possessive"),
    ],
)
def test_unsupported_regex_constructs_are_named(naive, vocab, pattern, construct):
    with pytest.raises(ca.UnsupportedConstraint, match=construct) as info:
        naive.compile(ca.Regex(pattern), vocab)
    assert info.value.backend == "naive"


def test_malformed_regex_fails_at_the_spec(naive):
    with pytest.raises(ca.ConstraintError) as info:
        ca.Regex("a(b")
    assert info.value.where == 1


def test_state_bound_raises_compile_limit(vocab):
    small = ca.get("naive", max_states=500)
    with pytest.raises(ca.CompileLimitExceeded):
        small.compile(ca.Regex(r"(a|b)*a(a|b){12}"), vocab)
    # the same bound as a per-compile option
    with pytest.raises(ca.CompileLimitExceeded):
        ca.get("naive").compile(ca.Regex(r"(a|b)*a(a|b){12}"), vocab, max_states=500)


def test_json_schema_keyword_it_cannot_express_names_naive(naive, vocab):
    schema = {"type": "array", "uniqueItems": True}
    with pytest.raises(ca.UnsupportedConstraint, match="uniqueItems at /") as info:
        naive.compile(ca.JsonSchema(schema), vocab)
    assert info.value.backend == "naive"


def test_unknown_compile_option(naive, vocab):
    with pytest.raises(TypeError, match="unknown compile options"):
        naive.compile(ca.Regex("a"), vocab, lookahead=3)


def test_an_empty_regex_language_is_refused(naive, vocab):
    with pytest.raises(ca.ConstraintError, match="no text satisfies it"):
        naive.compile(ca.Regex("[^\\x00-\\U0010ffff]"), vocab)
