"""The XGrammar adapter against the oracle: exact for regexes, choices,
grammars and lowered JSON schemas; the engine's own JSON converter's
differences measured and pinned (if XGrammar changes, a test here fails and
the README must be updated)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from constrain_conformance import checks, corpus, paths
from constrain_xgrammar import ebnf
from constrain_xgrammar.ebnf import automaton_rules, dfa_rules, grammar_ebnf, node_ebnf

import constrain_api as ca
from constrain_api.automata import ByteDFA, CharSet, parse_regex


@pytest.fixture(scope="module")
def vocab() -> ca.Vocabulary:
    return corpus.small_vocabulary()


@pytest.fixture(scope="module")
def xg() -> ca.Backend:
    return ca.get("xgrammar")


@pytest.fixture(scope="module")
def naive() -> ca.Backend:
    return ca.get("naive")


def _token(vocab: ca.Vocabulary, data: bytes) -> int:
    return vocab.tokens.index(data)


def _walk(checker: ca.Checker, vocab: ca.Vocabulary, text: bytes) -> None:
    checker.update([_token(vocab, bytes([b])) for b in text])


def test_registered_with_honest_capabilities(xg):
    assert "xgrammar" in {info.name for info in ca.available()}
    assert xg.capabilities.exact == {"regex", "choice", "grammar", "json_schema"}
    engine = ca.get("xgrammar", json_schema="engine").capabilities
    assert engine.exact == {"regex", "choice", "grammar"}


CASES = [
    c for c in corpus.CASES if c.family in ("regex", "choice", "grammar", "json_schema") and c.valid
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_masks_equal_the_oracles_on_the_corpus(xg, vocab, naive, case):
    """Natural, byte-by-byte and random paths: exactly the oracle's masks
    (JSON schemas through the core's lowering, those it lowers to an
    intersection of automata included: printed from their automaton)."""
    compiled = xg.compile(case.spec, vocab)
    oracle = naive.compile(case.spec, vocab)
    rng = random.Random(0)
    token_paths = [
        p
        for doc in case.valid
        for p in (paths.natural(vocab, doc), paths.byte_by_byte(vocab, doc))
        if p
    ]
    token_paths += [paths.random_path(oracle, rng, 16) for _ in range(3)]
    for path in token_paths:
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, f"{case.name}: {result.describe(vocab)}"


@pytest.mark.parametrize(
    "grammar, text",
    [
        ("start: A B\nA: /a+/\nB: /a/\n", b"aa"),  # no lexer: "a"+"a" is found
        ("start: NAME NAME\nNAME: /[a-z]+/\n", b"ab"),
        (corpus.ARITHMETIC_GRAMMAR, b"1  + 2 "),  # runs of ignored text, trailing too
    ],
    ids=["split", "adjacent", "ignore-runs"],
)
def test_character_level_parsing_has_no_lexer_gap(xg, vocab, grammar, text):
    checker = xg.compile(ca.Grammar(grammar), vocab).checker()
    _walk(checker, vocab, text)
    assert checker.is_accepting()


# (schema, text so far, token, the oracle allows it, the engine allows it)
ENGINE_JSON = [
    ({"type": "string", "maxLength": 12}, b'"', b"\x00", False, True),  # raw control char
    ({"type": "string", "maxLength": 12}, b'"', b"\\", True, False),  # no escapes
    ({"type": "integer"}, b"8", b".", True, False),  # no 8.0
    ({"type": "integer", "minimum": 0}, b"", b"-", True, False),  # no -0
]


@pytest.mark.parametrize(
    "schema, text, token, oracle_allows, engine_allows",
    ENGINE_JSON,
    ids=["maxlength-control", "maxlength-escape", "integer-8.0", "minus-0"],
)
def test_the_json_engine_differences_are_measured(
    naive, vocab, schema, text, token, oracle_allows, engine_allows
):
    spec = ca.JsonSchema(schema)
    engine = ca.get("xgrammar", json_schema="engine").compile(spec, vocab).checker()
    lowering = ca.get("xgrammar").compile(spec, vocab).checker()
    oracle = naive.compile(spec, vocab).checker()
    for checker in (engine, lowering, oracle):
        _walk(checker, vocab, text)
    t = _token(vocab, token)
    assert oracle.accepts(t) == lowering.accepts(t) == oracle_allows
    assert engine.accepts(t) == engine_allows


def test_errors(vocab):
    with pytest.raises(ValueError, match="json_schema"):
        ca.get("xgrammar", json_schema="fast")
    with pytest.raises(ca.UnsupportedConstraint, match="format_assertion"):
        engine = ca.get("xgrammar", json_schema="engine")
        engine.compile(ca.JsonSchema({}, format_assertion=False), vocab)
    with pytest.raises(ca.UnsupportedConstraint):
        ca.get("xgrammar").compile(ca.Regex(r"(a)\1"), vocab)
    with pytest.raises(TypeError, match="unknown compile options"):
        ca.get("xgrammar").compile(ca.Regex("a"), vocab, fast=True)
    for bad in (-1, 2.5, "4096"):
        with pytest.raises(ValueError, match="max_rule_states"):
            ca.get("xgrammar", max_rule_states=bad)


def test_ebnf_printing():
    assert node_ebnf(parse_regex("a[0-9]?")) == '("a" ([\\U00000030-\\U00000039])?)'
    assert node_ebnf(CharSet(())) == "[^\\U00000000-\\U0010FFFF]"
    ir = ca.lower_grammar(ca.Grammar('start: "x" NAME\nNAME: /[a-z]+/\n%ignore " "\n'))
    text = grammar_ebnf(ir)
    assert text.startswith("root ::= ign ") and "\nign ::= " in text
    # right-linear rules, one per state at a character boundary (é's second byte has none)
    assert dfa_rules(ByteDFA.from_node(parse_regex("ab*|é")), "r") == [
        "r ::= [\\U00000061] r_q1 | [\\U000000E9] r_q2",
        'r_q1 ::= "" | [\\U00000062] r_q1',
        'r_q2 ::= ""',
    ]


#: Two ignored terminals, one of them lark's WS (one or more whitespace characters).
IGNORING = r"""
start: item+
item: NAME | "(" item* ")"
NAME: /[a-z]+/
COMMENT: /#[^\n]*\n/
%import common.WS
%ignore WS
%ignore COMMENT
"""


@pytest.mark.parametrize("max_states", [4096, 0])
def test_a_run_of_ignored_whitespace_is_read_one_way(max_states):
    """``(WS)*`` cuts a run of n spaces into WS pieces in 2^(n-1) ways, all of
    which XGrammar's Earley parser follows (up to 200 ms a token with
    Llama-3): the run is printed from its automaton, one state looping on
    ``[\\t\\n\\f\\r ]`` as a rule, or (``max_rule_states=0``) that class
    starred: one way to read it either way."""
    grammar = "start: NAME\nNAME: /[a-z]+/\n%import common.WS\n%ignore WS\n"
    runs = [
        line
        for line in grammar_ebnf(ca.lower_grammar(ca.Grammar(grammar)), max_states).splitlines()
        if line.startswith("ign")
    ]
    ws = node_ebnf(parse_regex(r"[\t\n\f\r ]"))
    assert runs == (['ign ::= "" | ' + ws + " ign"] if max_states else [f"ign ::= ({ws})*"])


@pytest.mark.parametrize("spelling", ["automaton", "rule"])
def test_runs_of_ignored_terminals_keep_the_oracles_masks(xg, vocab, naive, monkeypatch, spelling):
    """Runs mixing two ignored terminals, spelled from the run's automaton or,
    when that automaton is too big to build, as the rule ``(t1 | t2)*``:
    exactly the oracle's masks either way."""
    if spelling == "rule":

        class TooBig:
            @staticmethod
            def from_node(node, **options):
                raise ca.CompileLimitExceeded("dfa_states", 1, 2, "a stand-in for a big run")

        monkeypatch.setattr(ebnf, "ByteDFA", TooBig)
    spec = ca.Grammar(IGNORING)
    lines = grammar_ebnf(ca.lower_grammar(spec)).splitlines()
    assert lines[0].startswith("root ::= ign ")
    runs = [line for line in lines if line.startswith("ign")]
    assert runs[0].startswith("ign ::= (t") == (spelling == "rule")
    compiled, oracle = xg.compile(spec, vocab), naive.compile(spec, vocab)
    doc = "  ab # note\n\t(cd  \n# x\n\n  e)   \n#\n"
    rng = random.Random(1)
    token_paths = [paths.natural(vocab, doc), paths.byte_by_byte(vocab, doc)]
    token_paths += [paths.random_path(oracle, rng, 24) for _ in range(4)]
    for path in token_paths:
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)


@pytest.mark.parametrize("name", sorted(corpus.TEXTLESS_CASES))
def test_an_intersection_past_the_rule_bound_is_refused(xg, vocab, name):
    """A language with an intersection (no regex text) is printed from its
    automaton; past ``max_rule_states`` states it would be printed from its
    AST, which has no EBNF spelling: refused, naming why."""
    case = next(c for c in corpus.CASES if c.name == name)
    assert xg.compile(case.spec, vocab).checker().mask().count() > 0
    with pytest.raises(ca.UnsupportedConstraint, match="intersection"):
        xg.compile(case.spec, vocab, max_rule_states=0)


def test_an_intersection_in_an_expression_is_its_automaton_s_rules(xg, vocab, naive):
    """Past ``max_rule_states`` the language is one expression, where an
    intersection (a lookahead's; a length-bounded pattern's) has no EBNF
    spelling: it is printed as the rules of its own automaton when that has
    at most ``max_rule_states`` states (it was refused), and the masks are
    the oracle's."""
    spec = ca.Regex(r"[0-9]{1,40}-(?=a)[a-c]")
    regex = ca.lower(spec)
    assert regex.dfa().num_states > 20
    rules = automaton_rules(regex.dfa, regex.regex_node, "root", 20)
    assert rules[0].endswith(" root_i0)") and rules[1].startswith("root_i0 ::= ")
    compiled = xg.compile(spec, vocab, max_rule_states=20)
    oracle = naive.compile(spec, vocab)
    for doc in ("123-a", "9-a"):
        for path in (paths.natural(vocab, doc), paths.byte_by_byte(vocab, doc)):
            result = checks.compare_masks(compiled, oracle, path)
            assert result.exact, result.describe(vocab)
    with pytest.raises(ca.UnsupportedConstraint, match="intersection"):
        automaton_rules(regex.dfa, regex.regex_node, "root", 0)


@pytest.mark.parametrize("max_rule_states", [0, 3, 4096])
def test_rules_or_expression_give_the_same_masks(xg, vocab, naive, max_rule_states):
    """A regex and a grammar printed as rules per state, or past the bound
    (0: always) as expressions: the oracle's masks either way, and the
    spelling the bound says."""
    for spec, doc in [
        (ca.Regex(r"(ab|c)*d{1,3}"), "abcabdd"),
        (ca.Grammar(IGNORING), "ab (cd # x\n e) "),
    ]:
        compiled = xg.compile(spec, vocab, max_rule_states=max_rule_states)
        oracle = naive.compile(spec, vocab)
        for path in (paths.natural(vocab, doc), paths.byte_by_byte(vocab, doc)):
            result = checks.compare_masks(compiled, oracle, path)
            assert result.exact, result.describe(vocab)
    regex = ca.lower(ca.Regex(r"(ab|c)*d{1,3}"))
    rules = automaton_rules(regex.dfa, regex.regex_node, "root", max_rule_states)
    states = regex.dfa().num_states
    assert 3 < states < 4096
    assert len(rules) == (states if max_rule_states >= states else 1)


def test_strided_and_fortran_rows_are_filled_without_touching_other_rows(xg, vocab):
    """The engine writes through a raw pointer: a Fortran-ordered bitmask once
    overwrote another sequence's row and a negative-stride view aborted the
    process. Both now get the row's mask and nothing else changes."""
    compiled = xg.compile(ca.Regex("[a-c]+x"), vocab)
    expected = compiled.checker().mask().words
    fortran = np.asfortranarray(np.full((3, expected.size), 7, dtype=np.int32))
    compiled.checker().fill_mask(fortran, 1)
    assert np.array_equal(fortran[1], expected)
    assert (fortran[0] == 7).all() and (fortran[2] == 7).all()
    backwards = np.full((2, expected.size), 7, dtype=np.int32)[:, ::-1]
    compiled.checker().fill_mask(backwards, 0)
    assert np.array_equal(backwards[0], expected) and (backwards[1] == 7).all()


def test_one_checker_from_two_threads_raises_instead_of_crashing(xg, vocab):
    """Two threads on one matcher crashed the process; the guard lets one in
    and the other gets RuntimeError (forks, one per thread, are fine)."""
    import threading

    compiled = xg.compile(ca.Grammar(corpus.JSON_GRAMMAR), vocab)
    checker = compiled.checker()
    bracket = _token(vocab, b"[")
    errors: list[BaseException] = []

    def hammer():
        row = ca.allocate_bitmask(1, compiled.vocab.size)
        for _ in range(300):
            try:
                checker.fill_mask(row, 0)
                checker.update([bracket])
                checker.rollback(1)
            except RuntimeError as e:
                errors.append(e)
            except ca.TokenRejected:
                pass

    threads = [threading.Thread(target=hammer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all("in use by another thread" in str(e) for e in errors)
    assert checker.rollback_depth == 0 and checker.mask().count() > 0


@pytest.mark.parametrize("pattern", ['[^"]{0,129}', "a{3,300}", "b{130,}", "(ab){256}"])
def test_no_count_past_128_reaches_the_engine(pattern, xg, vocab, naive):
    """XGrammar's masks allow too much past a count of 128: larger counts are
    written as a sequence of smaller ones, with the same language."""
    import re

    ebnf = node_ebnf(parse_regex(pattern))
    counts = [int(c) for c in re.findall(r"\{(\d+)", ebnf) + re.findall(r",(\d+)\}", ebnf)]
    assert counts and max(counts) <= 128, ebnf
    spec = ca.Regex(pattern)
    doc = {"[": "xy", "a": "aaa", "b": "b" * 130, "(": "ab" * 256}[pattern[0]]
    path = paths.natural(vocab, doc)
    assert checks.compare_masks(xg.compile(spec, vocab), naive.compile(spec, vocab), path).exact


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "http://example.com/x.json"},
        {"type": "array", "items": {"$ref": "other.json#/x"}},
    ],
)
def test_the_engine_converter_never_turns_a_remote_ref_into_any_json(schema, vocab):
    """XGrammar's converter logs a warning and allows any JSON for a reference
    it cannot resolve: the adapter refuses the schema instead."""
    with pytest.raises(ca.UnsupportedConstraint, match=r"\$ref"):
        ca.get("xgrammar", json_schema="engine").compile(ca.JsonSchema(schema), vocab)
    # a "$ref" inside data is not a reference
    data = {"const": {"$ref": "http://example.com/x.json"}}
    assert ca.get("xgrammar", json_schema="engine").compile(ca.JsonSchema(data), vocab)


def test_a_regex_too_large_to_expand_is_refused_before_the_engine(vocab):
    """XGrammar expands counted repetitions in one call that cannot be
    interrupted (a generated schema with maxItems 10^6 once kept it busy past
    60 s): past ``max_nfa_states``, counted on the AST, it is refused first."""
    with pytest.raises(ca.CompileLimitExceeded, match="before XGrammar") as info:
        ca.get("xgrammar").compile(ca.Regex("(ab|c[a-z]){300000}"), vocab)
    assert info.value.limit == "nfa_states"
    with pytest.raises(ca.CompileLimitExceeded, match="terminal"):
        ca.get("xgrammar").compile(
            ca.Grammar('start: "x" A\nA: /[a-c]{50}/'), vocab, max_nfa_states=40
        )
    ca.get("xgrammar").compile(ca.Regex("(ab|c){50}"), vocab, max_nfa_states=1000)
