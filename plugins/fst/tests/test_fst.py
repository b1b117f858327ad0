"""The ``fst`` backend against the oracle: exact masks at every step of random
oracle paths, on a trained BPE and (for what fits its limit) on Llama-3."""

from __future__ import annotations

import random

import pytest
from constrain_conformance import paths
from constrain_conformance.corpus import (
    DATE_TIME,
    IPV4,
    JSON_STRING,
    MULTIPLE_CHOICE,
    PERSON_SCHEMA,
    QUOTED_TEXT,
    real_vocabulary,
    small_vocabulary,
)

import constrain_api as ca

SPECS = {
    "multiple-choice": ca.Regex(MULTIPLE_CHOICE),
    "iso-date-time": ca.Regex(DATE_TIME),
    "ipv4": ca.Regex(IPV4),
    "quoted-text": ca.Regex(QUOTED_TEXT),
    "json-object": ca.JsonSchema(PERSON_SCHEMA),
    "json-string": ca.Regex(JSON_STRING),
    "number": ca.Regex(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?"),
    "leftmost-first": ca.Regex(r"[0-9]|10[0-9]"),
    "unicode": ca.Regex("1\u0660?|caf\u00e9|[\u4e2d\u6587]{1,3}"),
    "lookahead": ca.Regex(r"(?!ab)[a-z]{2}"),
    "email-ish": ca.Regex(r"[a-z]+@[a-z]+\.(com|org)"),
    "integer-range": ca.JsonSchema({"type": "integer", "minimum": -5, "maximum": 1200}),
    "enum": ca.JsonSchema({"enum": ["red", "green", {"rgb": [1, 2, 3]}]}),
    "choice": ca.Choice(["Paris", "Parma", "New York", "Zürich", "Z"]),
}


@pytest.fixture(scope="module")
def fst():
    return ca.get("fst")


@pytest.fixture(scope="module")
def naive():
    return ca.get("naive")


def _assert_same_masks(compiled, oracle, vocab, seed: str, count: int) -> None:
    rng = random.Random(seed)
    for _ in range(count):
        path = paths.random_path(oracle, rng, 20)
        mine, theirs = compiled.checker(), oracle.checker()
        for step in range(len(path) + 1):
            a, b = mine.mask(), theirs.mask()
            assert a == b, f"step {step}: +{(a - b).allowed_ids()[:5]} -{(b - a).allowed_ids()[:5]}"
            if step < len(path):
                mine.update([path[step]])
                theirs.update([path[step]])


@pytest.mark.parametrize("name", sorted(SPECS))
def test_masks_equal_the_oracles_on_a_trained_bpe(fst, naive, name):
    vocab = small_vocabulary()
    spec = SPECS[name]
    _assert_same_masks(fst.compile(spec, vocab), naive.compile(spec, vocab), vocab, name, 4)


@pytest.mark.shared
@pytest.mark.parametrize("name", ["multiple-choice", "iso-date-time", "ipv4", "number"])
def test_masks_equal_the_oracles_on_llama3(fst, naive, name):
    try:
        vocab = real_vocabulary("llama3")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    spec = SPECS[name]
    _assert_same_masks(fst.compile(spec, vocab), naive.compile(spec, vocab), vocab, name, 2)


@pytest.mark.shared
@pytest.mark.parametrize("name", ["quoted-text", "json-object"])
def test_wide_classes_on_llama3_hit_the_documented_limit(fst, name):
    """Without the paper's wildcard terminals, a class like [^"] in a bounded
    repetition would compose into millions of arcs: refused, not hung."""
    try:
        vocab = real_vocabulary("llama3")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    with pytest.raises(ca.CompileLimitExceeded, match="wildcard"):
        fst.compile(SPECS[name], vocab)


def test_refusals_and_limits(fst):
    vocab = small_vocabulary()
    with pytest.raises(ca.UnsupportedConstraint, match="fst"):
        fst.compile(ca.Regex(r"(ab)\1"), vocab)
    recursive = {"$ref": "#/$defs/t", "$defs": {"t": {"type": "array", "items": {"$ref": "#"}}}}
    with pytest.raises(ca.UnsupportedConstraint, match="grammar"):
        fst.compile(ca.JsonSchema(recursive), vocab)
    with pytest.raises(ca.UnsupportedConstraint):
        fst.compile(ca.Grammar('start: "a"'), vocab)
    with pytest.raises(ca.CompileLimitExceeded):
        fst.compile(ca.Regex("(a|b)*a(a|b){14}"), vocab, max_states=1000)
    with pytest.raises(TypeError, match="unknown compile options"):
        fst.compile(ca.Regex("a"), vocab, k=1)


def test_the_detokenizer_is_built_once_per_vocabulary():
    backend = ca.get("fst")
    vocab = small_vocabulary()
    backend.compile(ca.Regex("a+"), vocab)
    detok = backend._detokenizer(vocab)
    backend.compile(ca.Regex("b+"), vocab)
    assert backend._detokenizer(vocab) is detok


def test_empty_language_allows_nothing(fst):
    vocab = small_vocabulary()
    checker = fst.compile(ca.Regex("a[^\\x00-\\U0010ffff]"), vocab).checker()
    assert checker.mask().count() == 0
