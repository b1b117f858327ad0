"""Grammars as pushdown automata: masks equal the oracle's at every step
(tokens spanning terminals and non-terminals, recursion, ambiguity,
``%ignore``), left recursion rewritten or refused, empty languages."""

from __future__ import annotations

import numpy as np
import pytest
from constrain_conformance import checks, corpus, paths

import constrain_api as ca
from constrain_api.automata import CharSet

KEYWORDS = corpus.KEYWORDS_GRAMMAR
NESTED = corpus.NESTED_LIST_GRAMMAR
CASES = {case.name: case for case in corpus.CASES}

GRAMMARS = {
    "balanced": ('start: "(" start ")" | "x"', ["((x))", "x"]),
    "keywords": (KEYWORDS, corpus.KEYWORDS_DOCUMENTS),
    "nested": (NESTED, corpus.NESTED_LIST_DOCUMENTS),
    **{n: (CASES[n].spec.text, CASES[n].valid) for n in ("json", "c-subset", "xml-schema")},
    "left-recursive": ('start: start "+" NUM | NUM\nNUM: /[0-9]+/', ["1+22+333", "7"]),
    "nullable": ('start: a b "!"\na: "x"*\nb: "y"?', ["xxy!", "!", "y!"]),
}


@pytest.fixture(scope="module")
def vocab() -> ca.Vocabulary:
    return corpus.small_vocabulary()


@pytest.fixture(scope="module")
def naive() -> ca.Backend:
    return ca.get("naive")


def _paths(vocab, oracle, docs, seed, count=3):
    return paths.sample_paths(vocab, oracle, docs, seed, random_count=count)


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_masks_equal_the_oracles(vocab, naive, name):
    text, docs = GRAMMARS[name]
    spec = ca.Grammar(text)
    compiled, oracle = ca.get("fst").compile(spec, vocab), naive.compile(spec, vocab)
    for path in _paths(vocab, oracle, docs, name):
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)


def test_steps_remembered_at_a_position_keep_the_oracles_masks(vocab, naive, monkeypatch):
    """A position remembers where each token taken from it leads (the rows
    of a batch meet the same places): paths through one artifact keep the
    oracle's masks where later ones take remembered steps (a step keyed
    too loosely gives a wrong position), a remembered step is what a fresh
    one computes, and a position remembers at most ``KEEP_STEPS`` tokens."""
    from constrain_fst import backend as fst_backend

    text, docs = GRAMMARS["json"]
    spec = ca.Grammar(text)
    compiled, oracle = ca.get("fst").compile(spec, vocab), naive.compile(spec, vocab)
    for path in _paths(vocab, oracle, docs, "remembered", count=8):
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)
    start = compiled.checker().state
    closure = compiled.closure(start)
    remembered = dict(closure.after)
    assert len(remembered) >= 2  # (several first tokens were taken)
    closure.after.clear()
    for token, after in remembered.items():
        assert compiled.advance(start, token) == after
    monkeypatch.setattr(fst_backend, "KEEP_STEPS", 2)
    closure.after.clear()
    allowed = list(ca.TokenMask(compiled.checker().mask().words, vocab.size))[:5]
    steps = [compiled.advance(start, t) for t in allowed]
    assert len(closure.after) == 2
    assert [compiled.advance(start, t) for t in allowed] == steps


def test_without_wildcards_too(vocab, naive):
    text, docs = GRAMMARS["json"]
    spec = ca.Grammar(text)
    compiled = ca.get("fst", wildcards=False).compile(spec, vocab)
    assert compiled.stats.extra["wildcard_classes"] == 0
    oracle = naive.compile(spec, vocab)
    for path in _paths(vocab, oracle, docs, "plain"):
        assert checks.compare_masks(compiled, oracle, path).exact


def test_tokens_spanning_terminals_and_non_terminals(naive):
    tokens = [b"{", b"}", b'"', b"a", b":", b",", b"1", b'{"', b'":', b'",', b'"}', b'":1}']
    tokens += [b"[", b"]", b"[[", b"]]", b"1]]", b"<eos>"]
    vocab = ca.Vocabulary.from_list(tokens, eos=["<eos>"], special=["<eos>"])
    spec = ca.Grammar(corpus.JSON_GRAMMAR)
    checker = ca.get("fst").compile(spec, vocab).checker()
    reference = naive.compile(spec, vocab).checker()
    for token in (b"[[", b"[", b'{"', b"a", b'":1}', b"]]", b"]"):
        assert checker.mask() == reference.mask(), token
        assert checker.accepts(tokens.index(token)), token
        checker.update([tokens.index(token)])
        reference.update([tokens.index(token)])
    assert checker.is_accepting()
    assert not checker.accepts(tokens.index(b"]"))


def test_an_open_choice_between_calls_keeps_several_configurations(vocab):
    """Inside one non-terminal the acceptor is determinized ("if" the keyword
    and "if" the start of a name are one state); a choice between calls stays
    open as two configurations until the text decides."""
    grammar = 'start: a | b\na: "x" "y"\nb: "x" "z"'
    checker = ca.get("fst").compile(ca.Grammar(grammar), vocab).checker()
    checker.update(vocab.encode("x"))
    assert len(checker.state) == 2
    checker.update(vocab.encode("z"))
    assert checker.is_accepting() and len(checker.state) == 1


def test_rollback_and_fork_keep_the_stack(vocab):
    compiled = ca.get("fst").compile(ca.Grammar(NESTED), vocab)
    checker = compiled.checker()
    checker.update(vocab.encode("[[1,"))
    fork = checker.fork()
    checker.update(vocab.encode("2]]"))
    assert checker.is_accepting()
    checker.rollback(len(vocab.encode("2]]")))
    assert checker.mask() == fork.mask() and not checker.is_accepting()
    fork.update(vocab.encode("[]]]"))
    assert fork.is_accepting()


def test_indirect_left_recursion_is_refused(vocab):
    grammar = 'start: a "x" | "y"\na: start "z"'
    with pytest.raises(ca.UnsupportedConstraint, match="left recursion"):
        ca.get("fst").compile(ca.Grammar(grammar), vocab)
    hidden = 'start: e start "x" | "y"\ne: "z"?'  # through a nullable prefix
    with pytest.raises(ca.UnsupportedConstraint, match="left recursion"):
        ca.get("fst").compile(ca.Grammar(hidden), vocab)


def test_configurations_past_the_bound_are_a_compile_limit(vocab, monkeypatch):
    """An ambiguous grammar's stacks multiply with the text; past the bound a
    mask raises the documented ``CompileLimitExceeded``, not a bare error."""
    from constrain_fst import backend

    compiled = ca.get("fst").compile(ca.Grammar("start: r\nr: r r | N\nN: /[0-9]+/"), vocab)
    checker = compiled.checker()
    checker.update(paths.byte_by_byte(vocab, "1234"))
    monkeypatch.setattr(backend, "MAX_CLOSURE", 50)
    with pytest.raises(ca.CompileLimitExceeded, match="closure"):
        checker.update(paths.byte_by_byte(vocab, "5678"))
        checker.mask()


def test_a_grammar_with_no_string_is_refused_as_every_backend_does(vocab):
    with pytest.raises(ca.ConstraintError, match="derives no string"):
        ca.get("fst").compile(ca.Grammar('start: "a" start'), vocab)


def test_recursive_json_schema(vocab, naive):
    schema = corpus.TREE_SCHEMA
    spec = ca.JsonSchema(schema)
    compiled, oracle = ca.get("fst").compile(spec, vocab), naive.compile(spec, vocab)
    for path in _paths(vocab, oracle, [], "tree", count=4):
        assert checks.compare_masks(compiled, oracle, path).exact


@pytest.mark.shared
def test_json_grammar_on_llama3(naive):
    try:
        vocab = corpus.real_vocabulary("llama3")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    spec = ca.Grammar(corpus.JSON_GRAMMAR)
    compiled, oracle = ca.get("fst").compile(spec, vocab), naive.compile(spec, vocab)
    assert compiled.stats.extra["wildcard_classes"] >= 1
    docs = ['{"a": [1, 2.5, {"b": null}], "c": "x y"}']
    for path in _paths(vocab, oracle, docs, "llama3", count=1):
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)


ADJACENT = 'start: w "if"\nw: /[a-z]+/'  # a word's last state returns to letters read one by one
SEPARATED = 'start: w ";" w\nw: /[a-z]+/'  # ... into ";" only


def _exclusions(grammar: str):
    from constrain_fst.pushdown import Network
    from constrain_fst.wildcards import byte_table, class_exclusions, moves

    network = Network(ca.lower(ca.Grammar(grammar)).reduce(), 10_000)
    acceptor = network.pdt()[0]
    table, calls = byte_table(acceptor)
    letters = CharSet.range("a", "z")
    return calls, class_exclusions(table, letters, calls, moves(acceptor)), table


def test_a_chain_continues_through_returns_the_class_cannot_follow():
    calls, excluded, table = _exclusions(SEPARATED)
    looping = np.flatnonzero((table[:, ord("a")] >= 0) & calls)  # inside a word, may return
    assert len(looping) and not excluded[looping].any()
    calls, excluded, table = _exclusions(ADJACENT)
    first_word = np.flatnonzero((table[:, ord("a")] >= 0) & calls)
    assert excluded[first_word].any()  # its return leads to the second word's letters


@pytest.mark.parametrize("grammar", [ADJACENT, SEPARATED, 'start: w (" " w)*\nw: /[a-z]+/'])
def test_words_through_returns_are_exact(grammar, naive):
    """Tokens of several letters read by wildcards through a word's last
    state: where letters may follow its return (``if``), a token must be
    able to end the word in its middle (``abif``), so the wildcard chain
    may not continue there."""
    words = ["ab;", ";", "c;b", " ", " ab", "a b", "<eos>"]
    letters = [a + b + c for a in "abfi" for b in "abfi" for c in "abfi"]
    letters += [a + b for a in "abfi" for b in "abfi"] + list("abfi") + ["abif", "bbif"]
    tokens = sorted(set(words + letters))
    vocab = ca.Vocabulary.from_list(tokens, eos=["<eos>"], special=["<eos>"])
    spec = ca.Grammar(grammar)
    compiled, oracle = ca.get("fst").compile(spec, vocab), naive.compile(spec, vocab)
    if grammar != ADJACENT:  # there, no state is closed for the letters
        assert compiled.stats.extra["wildcard_classes"] >= 1  # the wildcard path is taken
    for path in paths.sample_paths(vocab, oracle, [], grammar, random_count=12, max_len=6):
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)
