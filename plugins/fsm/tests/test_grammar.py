"""``fsm`` grammars by iterative parsing (the Outlines paper's §4): exact
where no token spans two terminals, never more than the oracle anywhere, and
the missing *bridge* tokens measured where tokens do span terminals."""

from __future__ import annotations

import pytest
from constrain_conformance import checks, corpus, paths

import constrain_api as ca
from constrain_api.jsonschema import instance_text

#: A JSON-like grammar whose terminals avoid outlines-core's own gaps (no
#: terminal has an accepting state that a longer match leaves through a
#: non-accepting one), so every token it misses is a bridge token.
PLAIN_JSON = r"""
?start: value
?value: object | array | STRING | INT | "true" | "false" | "null"
array: "[" [value ("," value)*] "]"
object: "{" [pair ("," pair)*] "}"
pair: STRING ":" value
STRING: /"[a-z ]*"/
INT: /-?[0-9]+/
%ignore /[ \n]+/
"""
PLAIN_JSON_DOCUMENTS = (
    '{"ab": [1, -23, true], "c d": {"x": null}}',
    '[ "ab cd" , false,{}]',
    "-405",
)
#: Tokens that each lie inside one terminal of PLAIN_JSON, whatever the text.
INSIDE_ONE_TERMINAL = [
    *'{}[],:"-0123456789abcdxyz \n',
    *("true", "tr", "ue", "fa", "lse", "false", "nu", "ll", "null"),
    *('"ab', "cd", 'ab"', '"x"', '""', "12", "-4", "  ", " \n", "ab cd"),
]

GRAMMARS = {
    "plain-json": (PLAIN_JSON, PLAIN_JSON_DOCUMENTS),
    "keywords": (corpus.KEYWORDS_GRAMMAR, corpus.KEYWORDS_DOCUMENTS),
    "nested": (corpus.NESTED_LIST_GRAMMAR, corpus.NESTED_LIST_DOCUMENTS),
    "json": (corpus.JSON_GRAMMAR, ('{"name": "Ada", "age": 36, "tags": [1.5, -2e3]}',)),
    "xml": (corpus.XML_SCHEMA_GRAMMAR, ("<person><name>Ada L.</name><age>36</age></person>",)),
    "c-subset": (corpus.C_SUBSET_GRAMMAR, ("int main() { return f(1) + x; }",)),
}


@pytest.fixture(scope="module")
def fsm() -> ca.Backend:
    return ca.get("fsm")


@pytest.fixture(scope="module")
def naive() -> ca.Backend:
    return ca.get("naive")


@pytest.fixture(scope="module")
def bpe() -> ca.Vocabulary:
    return corpus.small_vocabulary()


def _comparisons(fsm, naive, spec, vocab, docs, seed="fsm-grammar", count=4):
    mine, oracle = fsm.compile(spec, vocab), naive.compile(spec, vocab)
    return [
        checks.compare_masks(mine, oracle, path)
        for path in paths.sample_paths(vocab, oracle, docs, seed, random_count=count, max_len=30)
    ]


def test_exact_where_no_token_spans_two_terminals(fsm, naive):
    vocab = ca.Vocabulary.from_list([*INSIDE_ONE_TERMINAL, "<eos>"], eos="<eos>")
    spec = ca.Grammar(PLAIN_JSON)
    results = _comparisons(fsm, naive, spec, vocab, PLAIN_JSON_DOCUMENTS, count=8)
    assert sum(r.steps for r in results) > 100
    for r in results:
        assert r.exact, r.describe(vocab)


def test_single_character_terminals_lose_exactly_the_longer_tokens(fsm, naive):
    # Every terminal is one byte, so every longer token spans terminals.
    vocab = ca.Vocabulary.from_list(["(", ")", "((", "()", "))", ")(", "(()", "<eos>"], eos="<eos>")
    spec = ca.Grammar('start: ("(" start ")")*')
    mine, oracle = fsm.compile(spec, vocab), naive.compile(spec, vocab)
    short = ca.TokenMask.from_ids([0, 1, vocab.eos_id], vocab.size)  # "(", ")", EOS
    seen_longer = 0
    for path in paths.sample_paths(vocab, oracle, ["(()())", "((()))()"], "parens", 6):
        a, b = mine.checker(), oracle.checker()
        for token in path:
            want = b.mask()
            assert a.mask() == want & short
            seen_longer += (want - short).count()
            if token not in a.mask():
                break  # fsm cannot follow a path through a longer token
            a.update([token])
            b.update([token])
    assert seen_longer > 0  # the gap is real, not an empty comparison


def test_bridge_tokens_are_measured_on_a_trained_bpe(fsm, naive, bpe):
    spec = ca.Grammar(PLAIN_JSON)
    results = _comparisons(fsm, naive, spec, bpe, PLAIN_JSON_DOCUMENTS)
    assert all(not r.extra for r in results)  # never more than the oracle
    missing = {(bpe.token_bytes(t)) for r in results for _, t in r.missing}
    oracle_allowed = sum(r.oracle_allowed for r in results)
    recall = 1 - sum(len(r.missing) for r in results) / oracle_allowed
    assert 0.5 < recall < 1.0
    # the missing tokens are the ones a terminal ends inside
    assert {b'{"', b'":', b'",', b", "} & missing
    assert not missing & {t.encode() for t in INSIDE_ONE_TERMINAL}


def test_every_missing_token_is_spelled_by_allowed_bytes(fsm, naive, bpe):
    """A missing token's bytes are allowed one at a time: the only obstacle
    is the token boundary (a terminal would have to end inside it)."""
    spec = ca.Grammar(PLAIN_JSON)
    mine, oracle = fsm.compile(spec, bpe), naive.compile(spec, bpe)
    single = {bpe.token_bytes(t): t for t in range(bpe.size) if len(bpe.token_bytes(t) or b"") == 1}
    checked = 0
    for path in paths.sample_paths(bpe, oracle, PLAIN_JSON_DOCUMENTS, "bytes", 3, 25):
        a, b = mine.checker(), oracle.checker()
        for token in path:
            for t in (b.mask() - a.mask()).allowed_ids().tolist()[:20]:
                walker = a.fork()
                for byte in bpe.token_bytes(t):
                    walker.update([single[bytes([byte])]])
                checked += 1
            if token not in a.mask():
                break
            a.update([token])
            b.update([token])
    assert checked > 20


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_never_more_than_the_oracle(fsm, naive, bpe, name):
    text, docs = GRAMMARS[name]
    for r in _comparisons(fsm, naive, ca.Grammar(text), bpe, docs, seed=name):
        assert not r.extra, r.describe(bpe)
        assert r.recall > 0.3, r.describe(bpe)


def test_ambiguous_lexing_keeps_every_reading(fsm, naive):
    # "if" is a keyword or the start of a name: both readings stay alive.
    vocab = ca.Vocabulary.from_list([*"ifxthenyz=; ", "if", "ify", "then", "<eos>"], eos="<eos>")
    spec = ca.Grammar(corpus.KEYWORDS_GRAMMAR)
    for r in _comparisons(fsm, naive, spec, vocab, corpus.KEYWORDS_DOCUMENTS, count=6):
        assert not r.extra, r.describe(vocab)
    checker = fsm.compile(spec, vocab).checker()
    checker.update([[vocab.token_bytes(t) for t in range(vocab.size)].index(b"if")])
    allowed = {vocab.token_bytes(t) for t in checker.mask().allowed_ids().tolist()}
    assert {b"x", b" ", b"="} <= allowed  # `if x`, `if=`: both readings


def test_state_operations_and_eos(fsm, bpe):
    spec = ca.Grammar(corpus.NESTED_LIST_GRAMMAR)
    compiled = fsm.compile(spec, bpe)
    path = paths.char_by_char(bpe, "[[1,[2,[]]],3]")
    assert checks.state_operation_failures(compiled, path) == []
    assert checks.run_document(compiled, path).accepted
    assert not checks.run_document(compiled, path[:-1]).accepted


def test_json_schemas_lowering_to_grammars_compile(fsm, naive, bpe):
    tree = {
        "$defs": {
            "t": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}},
            }
        },
        "$ref": "#/$defs/t",
    }
    spec = ca.JsonSchema(tree)
    assert ca.lower_json_schema(spec).kind == "grammar"
    doc = instance_text(tree, {"kids": [{}, {"kids": []}]})
    results = _comparisons(fsm, naive, spec, bpe, [doc])
    assert checks.run_document(fsm.compile(spec, bpe), paths.char_by_char(bpe, doc)).accepted
    assert all(not r.extra for r in results)
    assert fsm.compile(spec, bpe).stats.extra["terminals"] > 1


def test_refusals_and_limits(fsm, bpe):
    with pytest.raises(ca.UnsupportedConstraint, match="LALR") as e:
        fsm.compile(ca.Grammar('start: a | b\na: "z"\nb: "z"'), bpe)
    assert "Reduce/Reduce collision" in str(e.value)
    with pytest.raises(ca.UnsupportedConstraint, match="empty string"):
        fsm.compile(ca.Grammar('start: A "x"\nA: /a*/'), bpe)
    with pytest.raises(ca.UnsupportedConstraint, match="declare"):
        fsm.compile(ca.Grammar("start: INDENT\n%declare INDENT"), bpe)
    with pytest.raises(ca.ConstraintError, match="derives no string"):
        fsm.compile(ca.Grammar('start: "a" start'), bpe)
    tiny = ca.Vocabulary.from_list(["a", "<eos>"], eos="<eos>")
    with pytest.raises(ca.UnsupportedConstraint, match="terminal B: outlines-core"):
        fsm.compile(ca.Grammar('start: "a" B?\nB: "b"'), tiny)  # no token spells B
    with pytest.raises(ca.CompileLimitExceeded, match="states"):
        fsm.compile(ca.Grammar(corpus.JSON_GRAMMAR), bpe, max_states=10)


def test_terminal_patterns_outlines_core_cannot_read_go_as_automata(fsm, naive, bpe):
    # ESCAPED_STRING: lazy quantifiers and a lookbehind, resolved by the core
    # as a shortest-match automaton; outlines-core gets the automaton's regex.
    spec = ca.Grammar("start: ESCAPED_STRING\n%import common.ESCAPED_STRING")
    docs = ['"a \\"b\\" c"', '""', '"\\\\"']
    for r in _comparisons(fsm, naive, spec, bpe, docs):
        assert not r.extra, r.describe(bpe)
    compiled = fsm.compile(spec, bpe)
    assert checks.run_document(compiled, paths.char_by_char(bpe, '"a\\"b"')).accepted
    assert not checks.run_document(compiled, paths.char_by_char(bpe, '"a"b"')).accepted


def test_json_grammar_on_llama3(fsm, naive):
    try:
        vocab = corpus.real_vocabulary("llama3")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    text, docs = GRAMMARS["json"]
    results = _comparisons(fsm, naive, ca.Grammar(text), vocab, docs, count=2)
    assert all(not r.extra for r in results)
    assert any(r.missing for r in results)  # Llama-3 has `{"`, `":`, `",` ...
