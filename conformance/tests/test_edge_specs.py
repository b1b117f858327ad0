"""Edge-case constraints every installed backend must handle like the oracle:
the empty text as a choice or a regex (it once raised an undocumented
``ValueError`` in four backends), alone and beside other options; counted
repetitions past 128 (an engine once let forbidden tokens through); and
languages with no string at all (refused by every backend alike)."""

from __future__ import annotations

import pytest
from constrain_conformance import checks, corpus, paths

import constrain_api as ca

EDGE_SPECS = {
    "choice-empty-text": (ca.Choice([""]), ("",), ("a",)),
    "choice-empty-or-ab": (ca.Choice(["", "ab"]), ("", "ab"), ("a", "abab")),
    "regex-empty": (ca.Regex(""), ("",), ("a",)),
    # counts past 128: XGrammar once allowed `"` inside `[^"]{0,129}`
    "regex-negated-class-past-128": (ca.Regex('[^"]{0,129}'), ("abc", ""), ('a"',)),
    "regex-count-past-128": (ca.Regex("[^a]{3,200}x"), ("bbbx", "b" * 150 + "x"), ("bbx",)),
    "regex-at-least-past-128": (ca.Regex("b{130,}"), ("b" * 131,), ("b" * 129,)),
}


@pytest.fixture(scope="module")
def vocab() -> ca.Vocabulary:
    return corpus.small_vocabulary()


@pytest.mark.parametrize("name", sorted(EDGE_SPECS))
@pytest.mark.parametrize("backend_name", sorted(i.name for i in ca.available()))
def test_edge_specs_match_the_oracle(backend_name, name, vocab):
    spec, valid, invalid = EDGE_SPECS[name]
    backend = ca.get(backend_name)
    if not backend.capabilities.supports(spec.kind):
        pytest.skip(f"{backend_name} does not support {spec.kind}")
    compiled = backend.compile(spec, vocab)
    oracle = ca.get("naive").compile(spec, vocab)
    exact = backend.capabilities.is_exact(spec.kind)
    for doc in valid:
        path = paths.natural(vocab, doc)
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact if exact else not result.extra, result.describe(vocab)
        if exact:
            assert checks.run_document(compiled, path).accepted, doc
    for doc in invalid:
        assert not checks.run_document(compiled, paths.natural(vocab, doc)).accepted, doc


EMPTY_LANGUAGES = {
    "grammar-unproductive": ca.Grammar('start: "a" b\nb: b "c"'),
    "regex-empty-class": ca.Regex(r"[^\s\S]"),
    "regex-contradicting-lookahead": ca.Regex(r"a(?=b)c"),
    "schema-false": ca.JsonSchema(False),
    "schema-empty-enum": ca.JsonSchema({"enum": []}),
    "schema-minimum-above-maximum": ca.JsonSchema({"type": "integer", "minimum": 5, "maximum": 3}),
    "schema-required-property-empty": ca.JsonSchema(
        {"type": "object", "properties": {"a": {"enum": []}}, "required": ["a"]}
    ),
    "schema-self-reference": ca.JsonSchema({"$ref": "#"}),
}


@pytest.mark.parametrize("name", sorted(EMPTY_LANGUAGES))
@pytest.mark.parametrize("backend_name", sorted(i.name for i in ca.available()))
def test_an_empty_language_is_a_constraint_error_on_every_backend(backend_name, name, vocab):
    """One rule: no backend compiles a constraint no text satisfies (an
    engine once allowed a token that led nowhere; others gave an empty mask)."""
    spec = EMPTY_LANGUAGES[name]
    backend = ca.get(backend_name)
    if not backend.capabilities.supports(spec.kind):
        pytest.skip(f"{backend_name} does not support {spec.kind}")
    with pytest.raises(ca.ConstraintError) as info:
        backend.compile(spec, vocab)
    assert info.value.what == spec.kind
    assert "satisfies" in info.value.message
    if spec.kind == "json_schema":
        assert info.value.where == "#"


BUDGET_SPECS = (
    ca.Grammar('start: "[" x "]"\nx: /[a-c]+/ | "[" x "]"'),
    ca.Regex("(ab|c)*d"),
    ca.Choice(["ab", "cd"]),
)


class _Clock:
    """``time.perf_counter`` one second later at every reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1.0
        return self.now


@pytest.mark.parametrize("limit", ["max_seconds", "max_memory_mb"])
@pytest.mark.parametrize("backend_name", sorted(i.name for i in ca.available()))
def test_every_backend_honours_the_compile_budget(backend_name, limit, vocab, monkeypatch):
    """``max_seconds`` and ``max_memory_mb`` (constructor and per compile)
    stop every backend's compilation with ``CompileLimitExceeded`` naming
    the bound (time and memory readings faked: each one past the last), and
    the backend compiles the same constraint exactly afterwards."""
    from constrain_api import budget

    backend = ca.get(backend_name)
    spec = next(s for s in BUDGET_SPECS if backend.capabilities.supports(s.kind))
    ca.clear_caches()
    with monkeypatch.context() as patch:
        if limit == "max_seconds":
            patch.setattr(budget, "time", _Clock())
        else:
            rss = iter(range(1 << 30, 1 << 62, 1 << 30))  # 1 GiB more at each reading
            patch.setattr(budget, "resident_bytes", lambda: next(rss))
            patch.setattr(budget, "MEMORY_CHECK_INTERVAL", 0.0)
        with pytest.raises(ca.CompileLimitExceeded) as info:
            backend.compile(spec, vocab, **{limit: 0.5})
        assert info.value.limit == limit
        bounded = ca.get(backend_name, **{limit: 0.5})
        with pytest.raises(ca.CompileLimitExceeded):
            bounded.compile(spec, vocab)
    compiled = backend.compile(spec, vocab)
    oracle = ca.get("naive").compile(spec, vocab)
    doc = {"grammar": "[[ab]]", "regex": "abcd", "choice": "cd"}[spec.kind]
    result = checks.compare_masks(compiled, oracle, paths.natural(vocab, doc))
    exact = backend.capabilities.is_exact(spec.kind)
    assert result.exact if exact else not result.extra, result.describe(vocab)
