"""The domino backend against the oracle: exact masks with ``k=None`` on
grammars whose tokens span terminals, with keyword/name ambiguity and
nesting; sound (a subset) with a bounded lookahead, its recall measured."""

from __future__ import annotations

import numpy as np
import pytest
from constrain_conformance import checks, corpus, paths

import constrain_api as ca

KEYWORDS = corpus.KEYWORDS_GRAMMAR
NESTED = corpus.NESTED_LIST_GRAMMAR

GRAMMARS = {
    "keywords": (KEYWORDS, corpus.KEYWORDS_DOCUMENTS),
    "nested": (NESTED, corpus.NESTED_LIST_DOCUMENTS),
    "json": (corpus.JSON_GRAMMAR, ['{"a": [1, 2.5, {"b": null}], "c": "x y"}', "[true,false]"]),
    "c-subset": (
        corpus.C_SUBSET_GRAMMAR,
        ["int main(){ int x = 1; while (x < 10) { x = x + 1; } return x; }"],
    ),
    "xml": (corpus.XML_SCHEMA_GRAMMAR, ["<person><name>Ada</name><age>36</age></person>"]),
}


@pytest.fixture(scope="module")
def vocab() -> ca.Vocabulary:
    return corpus.small_vocabulary()


@pytest.fixture(scope="module")
def naive() -> ca.Backend:
    return ca.get("naive")


def _paths(vocab, oracle, docs, seed):
    return paths.sample_paths(vocab, oracle, docs, seed)


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_masks_equal_the_oracles(vocab, naive, name):
    text, docs = GRAMMARS[name]
    spec = ca.Grammar(text)
    compiled, oracle = ca.get("domino").compile(spec, vocab), naive.compile(spec, vocab)
    for path in _paths(vocab, oracle, docs, name):
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)


@pytest.mark.parametrize("name", ["exclusive-ways-schema", "not-object-schema"])
def test_schemas_whose_exclusions_are_disjoint_compile(vocab, naive, name):
    """oneOf and ``not: {required}`` lowered as disjoint ways (no document
    matches two), so the grammar is unambiguous and has LALR(1) tables
    (overlapping ways gave Shift/Reduce and Reduce/Reduce conflicts, and
    domino refused both); masks equal the oracle's."""
    case = next(c for c in corpus.CASES if c.name == name)
    compiled, oracle = ca.get("domino").compile(case.spec, vocab), naive.compile(case.spec, vocab)
    for path in _paths(vocab, oracle, case.valid, name):
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)


def test_tokens_spanning_several_terminals_are_allowed(naive):
    tokens = [
        b"{",
        b"}",
        b'"',
        b"a",
        b":",
        b",",
        b"1",
        b'{"',
        b'":',
        b'",',
        b'"}',
        b'":1}',
        b"<eos>",
    ]
    vocab = ca.Vocabulary.from_list(tokens, eos=["<eos>"], special=["<eos>"])
    spec = ca.Grammar(corpus.JSON_GRAMMAR)
    checker = ca.get("domino").compile(spec, vocab).checker()
    assert b'{"' in [vocab.token_bytes(t) for t in checker.mask().allowed_ids().tolist()]
    checker.update([tokens.index(b'{"'), tokens.index(b"a")])
    allowed = {vocab.token_bytes(t) for t in checker.mask().allowed_ids().tolist()}
    assert {b'":', b'":1}', b'"'} <= allowed and b'",' not in allowed
    reference = naive.compile(spec, vocab).checker()
    reference.update([tokens.index(b'{"'), tokens.index(b"a")])
    assert checker.mask() == reference.mask()
    checker.update([tokens.index(b'":1}')])
    assert checker.is_accepting()


def test_an_ambiguous_prefix_keeps_both_readings(vocab):
    compiled = ca.get("domino").compile(ca.Grammar(KEYWORDS), vocab)
    checker = compiled.checker()
    checker.update(vocab.encode("if"))
    # "if" as the keyword (expecting a name) or as the start of a name
    assert len(checker.state) == 2
    checker.update(vocab.encode("fy=z;"))
    assert checker.is_accepting() and len(checker.state) == 1


#: Recall of k=0 and k=1 along the longest-match paths of ``GRAMMARS`` (README).
RECALLS = {"json": (0.536, 0.928), "c-subset": (0.923, 0.936)}


@pytest.mark.parametrize("name", ["json", "c-subset"])
def test_bounded_lookahead_is_a_subset_and_its_recall_grows_with_k(vocab, naive, name):
    text, docs = GRAMMARS[name]
    spec = ca.Grammar(text)
    oracle = naive.compile(spec, vocab)
    token_paths = [p for p in (paths.longest_match(vocab, d) for d in docs) if p]
    recalls = []
    for k in (0, 1, None):
        backend = ca.get("domino", k=k)
        assert backend.capabilities.is_exact("grammar") == (k is None)
        compiled = backend.compile(spec, vocab)
        allowed = missing = 0
        for path in token_paths:
            # walk the oracle's path with the oracle; compare the masks at each state
            for step in range(len(path) + 1):
                prefix = path[:step]
                want = oracle.checker()
                want.update(prefix)
                got = compiled.checker()
                if got.validate(prefix) < len(prefix):
                    break  # a bounded lookahead refused a path token: no masks beyond
                got.update(prefix)
                g, w = got.mask(), want.mask()
                assert not set(g.allowed_ids().tolist()) - set(w.allowed_ids().tolist()), (k, step)
                allowed += w.count()
                missing += w.count() - g.count()
        recalls.append(1 - missing / allowed)
    assert recalls[0] < recalls[1] < recalls[2] == 1.0, recalls
    # the figures plugins/domino/README.md quotes: a change to the lookahead moves them
    assert recalls[:2] == pytest.approx(RECALLS[name], abs=5e-4), recalls


def test_regex_and_choice_are_exact_for_every_k(vocab, naive):
    for spec in (ca.Regex(corpus.IPV4), ca.Regex("(ab)*"), ca.Choice(["yes", "no", ""])):
        oracle = naive.compile(spec, vocab)
        for k in (0, None):
            compiled = ca.get("domino", k=k).compile(spec, vocab)
            for path in _paths(vocab, oracle, ["192.168.0.1", "abab", "yes"], str(spec)):
                if oracle.checker().validate(path) == len(path):
                    assert checks.compare_masks(compiled, oracle, path).exact


def test_precompute_builds_every_tree_and_changes_no_mask(vocab):
    spec = ca.Grammar(corpus.JSON_GRAMMAR)
    lazy = ca.get("domino").compile(spec, vocab)
    eager = ca.get("domino").compile(spec, vocab)
    info = eager.precompute()
    assert info["positions"] == len(eager.grammar.positions) and info["mask_bytes"] > 0
    path = paths.longest_match(vocab, GRAMMARS["json"][1][0])
    a, b = lazy.checker(), eager.checker()
    for token in path:
        assert a.mask() == b.mask()
        a.update([token])
        b.update([token])


def test_name_terminals_do_not_split_into_names(vocab):
    """The trees record only terminal pairs the grammar allows next to each
    other: after a C name, more letters continue it (no NAME NAME path)."""
    compiled = ca.get("domino").compile(ca.Grammar(corpus.C_SUBSET_GRAMMAR), vocab)
    name = compiled.grammar.index["NAME"]
    for position in compiled.grammar.positions:
        tree = compiled.tree(position)
        for node, children in enumerate(tree.children):
            if tree.label[node] == name:
                assert name not in dict(children), position


def test_terminals_that_may_follow_and_start(vocab):
    """The scanner's FOLLOW and FIRST sets over terminals, through optional
    parts, empty rules and recursion (``%ignore``d terminals in none)."""
    text = r"""
        start: A b c D | E start F
        b: B?
        c: C | g
        g: G g |
        A: "a"
        B: "b"
        C: "c"
        D: "d"
        E: "e"
        F: "f"
        G: "g"
        WS: " "
        %ignore WS
    """
    grammar = ca.get("domino").compile(ca.Grammar(text), vocab).grammar
    names = grammar.names

    def named(indices):
        return {names[i] for i in indices}

    follows = {names[t]: named(f) for t, f in enumerate(grammar.follows)}
    assert follows["A"] == {"B", "C", "G", "D"}
    assert follows["B"] == {"C", "G", "D"}
    assert follows["C"] == {"D"}
    assert follows["G"] == {"G", "D"}
    assert follows["D"] == {"F"}
    assert follows["E"] == {"A", "E"}
    assert follows["F"] == {"F"}
    assert named(grammar.initial) == {"A", "E"}
    assert "WS" not in set().union(*follows.values()) | named(grammar.initial)


#: Grammars with no LALR(1) tables, and documents of each: parsed along
#: every action of their conflicts (one stack per parse).
NOT_LALR = {
    # reduce/reduce: one sentence, two parses
    "ambiguous": ('start: a | b\na: "x" "y"\nb: "x" "y"', ["xy"]),
    # shift/reduce: an LALR(1) parser resolving it would lose "xy" or "xyyy"
    "shift-reduce": ('start: a "y"\na: "x" | "x" "y" "y"', ["xy", "xyyy"]),
    # which of a, b it was shows two terminals later
    "lookahead-2": ('start: a "q" "y" | b "q" "z"\na: "x"\nb: "x"', ["xqy", "xqz"]),
    # ambiguous without bound: every bracketing of the sums
    "sums": ('start: e\ne: e "+" e | NUM\nNUM: /[0-9]+/', ["1+22+3", "4+5+6+7"]),
    # anyOf of two open object shapes: {} and {"x": 1} match both
    "anyOf-objects": (
        ca.JsonSchema(
            {
                "anyOf": [
                    {"type": "object", "properties": {"n": {"type": "integer"}}},
                    {"type": "object", "properties": {"m": {"type": "integer"}}},
                ]
            }
        ),
        ['{"n":1}', '{"m":2,"x":true}', "{}"],
    ),
}


@pytest.mark.parametrize("name", sorted(NOT_LALR))
def test_grammars_with_conflicts_follow_every_parse_and_equal_the_oracle(vocab, naive, name):
    spec, docs = NOT_LALR[name]
    spec = ca.Grammar(spec) if isinstance(spec, str) else spec
    with pytest.raises(ca.UnsupportedConstraint, match="LALR"):
        ca.get("fsm").compile(spec, vocab)  # (no LALR(1) tables: the case is one)
    compiled, oracle = ca.get("domino").compile(spec, vocab), naive.compile(spec, vocab)
    assert compiled.stats.extra["lr_conflicts"] > 0
    for path in _paths(vocab, oracle, docs, name):
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)


@pytest.mark.shared
@pytest.mark.parametrize("stem", ["Github_medium---o60846", "Github_hard---o6344"])
def test_maskbench_schemas_with_conflicts_equal_the_oracle(vocab, naive, stem):
    """Two real schemas whose lowered grammars have no LALR(1) tables
    (overlapping ``anyOf`` objects; refused before): masks along their
    valid instances equal the oracle's."""
    import json

    from constrain_api.jsonschema import instance_text
    from constrain_api.shared import shared_file

    try:
        doc = json.loads(shared_file(f"maskbench/data/{stem}.json").read_text())
    except FileNotFoundError as e:
        pytest.skip(str(e))
    spec = ca.JsonSchema(doc["schema"])
    compiled, oracle = ca.get("domino").compile(spec, vocab), naive.compile(spec, vocab)
    assert compiled.stats.extra["lr_conflicts"] > 0
    docs = [instance_text(doc["schema"], t["data"]) for t in doc["tests"] if t["valid"]]
    assert docs
    for path in _paths(vocab, oracle, docs, stem):
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)


def test_parses_alive_at_once_are_bounded(vocab):
    """Every bracketing of a sum of products is a parse with a stack of its
    own (Catalan numbers of them): past ``MAX_PARSES`` configurations the
    step raises ``CompileLimitExceeded`` and the checker stays where it was."""
    from constrain_domino import backend

    grammar = 'start: e\ne: e "+" e | e "*" e | "1"'
    checker = ca.get("domino").compile(ca.Grammar(grammar), vocab).checker()
    tokens = vocab.encode("1+1*" * 40 + "1")
    with pytest.raises(ca.CompileLimitExceeded, match="parses=1024") as e:
        for token in tokens:
            before = checker.state
            checker.update([token])
    assert e.value.value > backend.MAX_PARSES >= len(before)
    assert checker.state == before and checker.mask().allowed_ids().size > 0


def test_errors(vocab):
    domino = ca.get("domino")
    # conflicts are followed (above), hidden left recursion refused by name
    with pytest.raises(ca.UnsupportedConstraint, match="hidden left recursion"):
        domino.compile(ca.Grammar('start: n start "c" | "d"\nn: "e"?'), vocab)
    with pytest.raises(ca.UnsupportedConstraint, match="empty string"):
        domino.compile(ca.Grammar('start: A "b"\nA: /a*/'), vocab)
    with pytest.raises(ca.ConstraintError):
        domino.compile(ca.Grammar("start: undefined"), vocab)
    # automata are built as decoding walks them: max_states stops the walk
    # that finds one state too many (the minimal DFA has 131,072)
    exploding = domino.compile(ca.Regex("(a|b)*a(a|b){16}"), vocab, max_states=1000)
    assert exploding.stats.states <= 1000
    with pytest.raises(ca.CompileLimitExceeded, match="states=1000"):
        exploding.precompute()
    with pytest.raises(ca.UnsupportedConstraint):
        domino.compile(ca.Where("len(x) < 3"), vocab)
    with pytest.raises(ValueError):
        ca.get("domino", k=-1)


@pytest.mark.shared
@pytest.mark.parametrize("name", ["json", "c-subset"])
def test_exact_on_llama3(name):
    try:
        vocab = corpus.real_vocabulary("llama3")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    text, docs = GRAMMARS[name]
    spec = ca.Grammar(text)
    compiled, oracle = ca.get("domino").compile(spec, vocab), ca.get("naive").compile(spec, vocab)
    for doc in docs:
        for path in (paths.natural(vocab, doc), paths.longest_match(vocab, doc)):
            result = checks.compare_masks(compiled, oracle, path[:40])
            assert result.exact, result.describe(vocab)


def test_speculative_drafts_learned_from_accepted_tokens(vocab):
    """The count model proposes what was accepted before in the same context;
    the decoding loop verifies the drafts, so the output is unchanged and
    fewer forward passes are needed once the model has learned."""
    torch = pytest.importorskip("torch")
    from constrain_api.decoding import ScriptedLM, argmax, generate

    assert ca.FEATURE_PROPOSE in ca.get("domino").capabilities.features
    spec = ca.Grammar(NESTED)
    compiled = ca.get("domino").compile(spec, vocab)
    fresh = compiled.checker()
    assert fresh.propose(4) == []  # nothing learned yet
    target = vocab.encode("[[1,2],[1,2],[1,2]]")
    # the loop feeds a draft with the prompt once the model has learned: say where it ends
    lm = ScriptedLM(target, width=vocab.size, eos_id=vocab.eos_id, prompt_length=1)
    # (drafts fed whenever there are some: the measured policy's choice
    # depends on pass times, which a loaded machine moves)
    run = {"max_len": 40, "speculative": 4, "draft_policy": "always"}
    first = generate(lm, vocab, [[vocab.eos_id]], compiled, argmax(), **run)
    second = generate(lm, vocab, [[vocab.eos_id]], compiled, argmax(), **run)
    assert first.sequences[0].token_ids == second.sequences[0].token_ids == target
    assert second.totals()["accepted"] > 0
    assert second.totals()["forward_passes"] < first.totals()["forward_passes"]
    draft = compiled.checker().propose(3)
    assert draft and compiled.checker().validate(draft) == len(draft)
    del torch


def test_update_of_several_tokens_is_atomic_and_learns_each_in_its_context(vocab):
    """One ``update`` of several tokens steps them once: a rejected one
    leaves the state and the speculative model as they were (nothing
    learned, the index of the refused token reported); accepted ones are
    each counted in the context before them, so a fresh checker proposes
    them back in order, and the state is the one token-by-token updates reach."""
    compiled = ca.get("domino").compile(ca.Grammar(NESTED), vocab)
    tokens = vocab.encode("[[1,2]]")  # (each token in a context of its own)
    checker = compiled.checker()
    probe = ca.get("domino").compile(ca.Grammar(NESTED), vocab).checker()  # (learns apart)
    probe.update(tokens[:2])
    bad = next(t for t in range(vocab.size) if not probe.accepts(t))
    with pytest.raises(ca.TokenRejected) as e:
        checker.update([*tokens[:2], bad])
    assert e.value.index == 2 and checker.state == compiled.checker().state
    assert compiled.checker().propose(4) == []
    checker.update(tokens)
    one_by_one = compiled.checker()
    for t in tokens:
        one_by_one.update([t])
    assert checker.state == one_by_one.state and checker.is_accepting()
    assert compiled.checker().propose(len(tokens)) == tokens


def test_one_token_updates_take_the_short_path_with_the_general_ones_result(vocab):
    """``update([t])`` with a plain int (the decoding loop's call) skips the
    general path; it must reach the same states, learn the same counts and
    refuse, terminate or raise exactly as the general path (numpy ids) does."""
    fast = ca.get("domino").compile(ca.Grammar(NESTED), vocab)
    slow = ca.get("domino").compile(ca.Grammar(NESTED), vocab)
    tokens = vocab.encode("[[1,2],[3]]")
    a, b = fast.checker(), slow.checker()
    for t in tokens:
        a.update([t])
        b.update([np.int64(t)])
        assert a.state == b.state
    assert fast._counts == slow._counts and fast._counts
    eos = vocab.eos_id
    special = next(iter(vocab.special_ids - vocab.eos_ids), None)
    bad = next(t for t in range(vocab.size) if t not in vocab.special_ids and not a.accepts(t))
    for wrong in [bad, -1, vocab.size] + ([special] if special is not None else []):
        with pytest.raises(ca.TokenRejected):
            a.update([wrong])
        assert a.state == b.state
    a.update([eos])
    assert a.terminated
    with pytest.raises(ca.TokenRejected):
        a.update([tokens[0]])
    start = fast.checker()
    with pytest.raises(ca.TokenRejected):  # EOS before the text is complete
        start.update([eos])
    assert start.state == fast.checker().state


def test_opportunistic_masking_checks_the_models_pick_first(vocab):
    """With ``opportunistic=True`` the loop asks ``accepts`` about the model's
    own pick and builds a mask only when it is refused: a model that wants a
    valid document gets it with no mask computed; one that wants an invalid
    one is corrected through masks, to the same output as full masking."""
    pytest.importorskip("torch")
    from constrain_api.decoding import ScriptedLM, argmax, generate

    spec = ca.Grammar(NESTED)
    for text, masks_expected in (("[[1,2],[3]]", False), ("[[1,2],[3]]]]", True)):
        outputs, masks = [], []
        for opportunistic in (False, True):
            compiled = ca.get("domino").compile(spec, vocab)
            calls = []
            original = compiled.state_mask
            compiled.state_mask = lambda state, f=original, n=calls: n.append(1) or f(state)
            lm = ScriptedLM(vocab.encode(text), width=vocab.size, eos_id=vocab.eos_id)
            result = generate(
                lm,
                vocab,
                [[vocab.eos_id]],
                compiled,
                argmax(),
                max_len=30,
                opportunistic=opportunistic,
            )
            outputs.append(result.sequences[0].token_ids)
            masks.append(len(calls))
        assert outputs[0] == outputs[1]
        assert masks[1] < masks[0]
        assert (masks[1] > 0) == masks_expected, masks


def test_the_mask_cache_keeps_the_recently_used_states(vocab):
    compiled = ca.get("domino", mask_cache=2).compile(ca.Grammar(NESTED), vocab)
    checker = compiled.checker()
    first = checker.state
    checker.mask()
    checker.update(vocab.encode("["))
    second = checker.state
    checker.mask()
    compiled.state_mask(first)  # used again: now the most recent
    checker.update(vocab.encode("["))
    checker.mask()  # a third state evicts the least recently used one
    assert first in compiled._masks and second not in compiled._masks


@pytest.mark.parametrize("pattern", ["(?!)", "a(?!a)a"])
def test_regexes_with_no_string_are_refused(pattern):
    vocab = ca.Vocabulary.from_list([b"a", b"b", b"ab", b"<e>"], eos=[3], special=[3])
    with pytest.raises(ca.ConstraintError, match="no text satisfies it"):
        ca.get("domino").compile(ca.Regex(pattern), vocab)


@pytest.mark.parametrize("pattern", ["", "(ab)*", "a?"])
def test_regexes_with_the_empty_string(pattern, naive):
    """The empty string is an empty rule (terminals never match it)."""
    vocab = ca.Vocabulary.from_list([b"a", b"b", b"ab", b"<e>"], eos=[3], special=[3])
    spec = ca.Regex(pattern)
    got, want = (
        ca.get("domino").compile(spec, vocab).checker(),
        naive.compile(spec, vocab).checker(),
    )
    for token in [None, 0, 1]:
        if token is not None:
            if not want.accepts(token):
                break
            got.update([token])
            want.update([token])
        assert got.mask() == want.mask() and got.is_accepting() == want.is_accepting()


def _content(tree) -> dict:
    """A tree as {path of terminals: (free tokens, {terminal: checked tokens})},
    independent of how its nodes are numbered."""
    paths, todo = {}, [(0, ())]
    while todo:
        node, path = todo.pop()
        free = tree.free[node]
        checked = {t: tuple(tree.token_ids(m).tolist()) for t, m in tree.checked[node]}
        paths[path] = (None if free is None else tuple(tree.token_ids(free).tolist()), checked)
        todo.extend((child, (*path, t)) for t, child in tree.children[node])
    return paths


@pytest.mark.parametrize("name", ["json", "c-subset"])
def test_trees_sharing_a_memo_equal_trees_built_alone(vocab, name):
    """Positions share the walk's memo (sets, steps, paths): a tree built
    after others, or after the memo started over, is the tree a fresh
    builder gives; and no tree keeps a path without tokens below it."""
    from constrain_domino import TreeBuilder, VocabTrie, build_tree

    compiled = ca.get("domino").compile(ca.Grammar(GRAMMARS[name][0]), vocab)
    grammar, trie = compiled.grammar, VocabTrie(vocab)
    positions = grammar.positions
    alone = {p: _content(build_tree(grammar, p, trie)) for p in positions}
    shared, small = TreeBuilder(grammar, trie), TreeBuilder(grammar, trie, max_sets=8)
    for p in positions + positions[::-1]:  # built again once the memo knows every step
        assert _content(shared.build(p)) == alone[p], p
        assert _content(small.build(p)) == alone[p], p
        assert len(small.sets) <= 8 + len(shared.sets)
    assert len(shared.sets) > 8  # so the small builder did start over
    for p in positions:
        tree = shared.build(p)
        for node in range(1, tree.num_nodes):
            below = [node]
            has_tokens = False
            while below and not has_tokens:
                n = below.pop()
                has_tokens = tree.free[n] is not None or bool(tree.checked[n])
                below.extend(child for _, child in tree.children[n])
            assert has_tokens, (p, node)


SLICE_GRAMMARS = {
    # a string that may end anywhere inside: no state inside it absorbs
    "open-string": r"""
        start: S ("," S)*
        S: /"[a-z ]*"?/
    """,
    "strings": r"""
        start: "[" S ("," S)* "]"
        S: /"(?:[^"\\]|\\["\\n])*"/
    """,
}
SLICE_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "note": {"type": "string", "maxLength": 5}},
    "additionalProperties": {"type": "string"},
}


def _slice_compilations(vocab):
    domino = ca.get("domino")
    yield "json", domino.compile(ca.Grammar(corpus.JSON_GRAMMAR), vocab)
    for name, text in SLICE_GRAMMARS.items():
        yield name, domino.compile(ca.Grammar(text), vocab)
    yield "schema", domino.compile(ca.JsonSchema(SLICE_SCHEMA), vocab)


def test_slices_change_no_tree(vocab):
    """Subtrees of plain tokens below a walk set that every plain string
    leaves as it is are taken whole, not walked: every position's tree
    equals the one walked token by token (a string of at most 5
    characters, whose states do not come back to themselves, included);
    slices are taken inside strings (the JSON grammar's, the schema's
    names and values) and never where a terminal may end inside the plain
    characters (an open string)."""
    from constrain_domino import TreeBuilder, VocabTrie

    trie = VocabTrie(vocab)
    sliced = {}
    for name, compiled in _slice_compilations(vocab):
        grammar = compiled.grammar
        sliced[name] = 0
        walked, fast = TreeBuilder(grammar, trie, slices=False), TreeBuilder(grammar, trie)
        for p in grammar.positions:
            tree = fast.build(p)  # (after other positions: their sets are stepped already)
            want = _content(walked.build(p))
            assert _content(tree) == want, (name, p)
            assert walked.build(p).sliced == 0
            # a builder of its own steps every set in this walk, between its passes
            assert _content(TreeBuilder(grammar, trie).build(p)) == want, (name, p)
            sliced[name] += tree.sliced
    assert sliced["json"] > 0 and sliced["strings"] > 0 and sliced["schema"] > 0, sliced
    assert sliced["open-string"] == 0, sliced


def _absorbs_byte_by_byte(grammar, plain, t: int, q: int) -> bool:
    """The definition of ``TreeBuilder._absorbs``, read one byte at a time
    from the automata's 256-entry rows (the product of the terminal's
    automaton with the plain characters', from ``q``)."""
    rows, accept = grammar.rows[t], grammar.accept[t]
    todo, seen = [(plain.start, q)], {(plain.start, q)}
    while todo:
        p, d = todo.pop()
        if accept[d]:
            return False
        for byte in range(256):
            p2 = plain.rows[p][byte]
            if p2 < 0:
                continue
            d2 = rows[d][byte]
            if d2 < 0 or (d2 != q if plain.accept[p2] else accept[d2]):
                return False
            if not plain.accept[p2] and (p2, d2) not in seen:
                seen.add((p2, d2))
                todo.append((p2, d2))
    return True


def test_which_sets_absorb_plain_strings_follows_its_definition(vocab):
    """``_absorbs`` (read from the automata's byte runs) says of every
    position what reading every byte of the rows says, and some positions
    of each grammar with strings absorb."""
    from constrain_domino import TreeBuilder, VocabTrie

    trie = VocabTrie(vocab)
    for name, compiled in _slice_compilations(vocab):
        grammar, builder = compiled.grammar, TreeBuilder(compiled.grammar, trie)
        verdicts = [
            builder._absorbs(t, q) == _absorbs_byte_by_byte(grammar, trie.plain_dfa, t, q)
            for t, q in grammar.positions
            if t >= 0
        ]
        assert all(verdicts), name
        absorbing = [builder._absorbs(t, q) for t, q in grammar.positions if t >= 0]
        assert any(absorbing) == (name != "open-string"), name


KEYS_SCHEMA = {  # keys as terminals: after `"` (or `,"`), one walk set holds them all
    "type": "object",
    "properties": {
        key: {"type": kind}
        for key, kind in zip(
            ["name", "note", "nickname", "age", "alive", "aliases", "id", "ids"],
            ["string", "string", "string", "integer", "boolean", "array", "number", "array"],
            strict=True,
        )
    },
}


def test_a_small_groups_tokens_are_kept_as_ids_and_masks_stay_exact(vocab, naive):
    """A group of at most ``FEW_TOKENS`` tokens (fewer than a packed row's
    words) is kept as its token ids, a larger one as a packed row; the
    trees hold both kinds, and masks built from them equal the oracle's."""
    from constrain_domino import trees

    few = min(trees.FEW_TOKENS, (vocab.size + 31) // 32 - 1)
    spec = ca.Grammar(corpus.JSON_GRAMMAR)
    compiled = ca.get("domino").compile(spec, vocab)
    kinds = set()
    for p in compiled.grammar.positions:
        tree = compiled.tree(p)
        for node in range(tree.num_nodes):
            groups = [m for _, m in tree.checked[node]]
            groups += [tree.free[node]] if tree.free[node] is not None else []
            for tokens in groups:
                ids = tree.token_ids(tokens).tolist()
                assert ids and ids == sorted(set(ids)) and ids[-1] < vocab.size
                if tokens.size == tree.words:
                    kinds.add("row")
                else:
                    kinds.add("ids")
                    assert len(ids) == tokens.size <= few
                    assert tokens.size < tree.words
    assert kinds == {"row", "ids"}
    oracle = naive.compile(spec, vocab)
    for path in _paths(vocab, oracle, GRAMMARS["json"][1], "json"):
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)


def test_every_bytes_step_of_a_walk_set_is_the_one_byte_definition(vocab):
    """``_step_all`` fills a walk set's steps for all bytes at once from its
    elements' byte ranges; each equals ``_step``, the one-byte definition,
    for every set the trees of every position meet (many keys as terminals,
    ``%ignore``d whitespace, the boundary, names and keywords)."""
    from constrain_domino import TreeBuilder, VocabTrie

    trie = VocabTrie(vocab)
    domino = ca.get("domino")
    compilations = [
        domino.compile(ca.JsonSchema(KEYS_SCHEMA), vocab),
        domino.compile(ca.Grammar(corpus.JSON_GRAMMAR), vocab),
        domino.compile(ca.Grammar(corpus.C_SUBSET_GRAMMAR), vocab),
    ]
    largest = 0
    for compiled in compilations:
        builder = TreeBuilder(compiled.grammar, trie)
        for p in compiled.grammar.positions:
            builder.build(p)
        stepped = [sid for sid in range(len(builder.sets)) if builder.steps[sid, 0] != -2]
        assert len(stepped) > 10
        for sid in stepped:
            row = builder.steps[sid].copy()
            assert row.tolist() == [builder._step(sid, b) for b in range(256)], sid
            largest = max(largest, len(builder.sets[sid]))
    assert largest >= 8  # a set holding all the keys was stepped


@pytest.mark.parametrize(
    "tokens",
    [[b'"'], [b'"', b"\\", b'\\"', b'""', b"\\n", b'"\\']],
    ids=["no-token-stays-inside", "escapes"],
)
def test_a_vocabulary_without_plain_tokens_inside_a_string(naive, tokens):
    """Inside a string (a set that absorbs plain strings) where no token is
    plain, and where no token at all stays inside the string: the masks
    are still the oracle's."""
    vocab = ca.Vocabulary([b"<eos>", *tokens], eos_ids=[0], special_ids=[0])
    spec = ca.Grammar(SLICE_GRAMMARS["strings"].replace('"[" S ("," S)* "]"', "S"))
    compiled, oracle = ca.get("domino").compile(spec, vocab), naive.compile(spec, vocab)
    for doc in ('""', '"\\""', '"\\\\\\""'):
        path = paths.longest_match(vocab, doc)
        if path is None:  # (not spelled by these tokens)
            continue
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)
    assert compiled._trees


def test_plain_tokens_and_mixed_subtrees(vocab):
    """``plain``: a trie node's bytes are whole characters a JSON string
    holds unescaped; ``mixed``: a node's subtree has a token that is not;
    ``plain_tokens``: the packed row of the tokens that are plain (not
    the empty one)."""
    from constrain_domino import VocabTrie

    trie = VocabTrie(vocab)
    plain_row = ca.bitmask_to_bool(trie.plain_tokens.view(np.int32)[None], vocab.size)[0]
    for token_id in range(vocab.size):
        data = vocab.token_bytes(token_id)
        try:
            text = data.decode("utf-8")
            plain = bool(data) and not any(c in '"\\' or ord(c) < 0x20 for c in text)
        except UnicodeDecodeError:
            plain = False
        assert bool(plain_row[token_id]) == (plain and token_id in trie.token_ids), data
        if not data:
            continue
        for j in np.flatnonzero(trie.token_ids == token_id):
            node = int(trie.token_node[j])
            assert bool(trie.plain[node]) == plain, data
            assert trie.mixed[node] or plain, data
    for node in range(trie.num_nodes):
        below = range(trie.token_offsets[node], trie.token_offsets[trie.subtree_end[node]])
        impure = any(not trie.plain[trie.token_node[j]] for j in below)
        assert bool(trie.mixed[node]) == impure, node


@pytest.mark.shared
def test_slices_change_no_mask_on_llama3(naive):
    """On Llama-3's vocabulary (128k tokens, many of them plain, or UTF-8
    pieces): masks along the schema's documents equal the oracle's, and
    the trees of the positions met equal the trees walked token by token."""
    from constrain_domino import TreeBuilder

    try:
        vocab = corpus.real_vocabulary("llama3")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    spec = ca.JsonSchema(SLICE_SCHEMA)
    compiled, oracle = ca.get("domino").compile(spec, vocab), naive.compile(spec, vocab)
    doc = '{"name":"Ada été \\"x\\" of the year","note":"é","zone":"日本 and more"}'
    for path in (paths.natural(vocab, doc), paths.longest_match(vocab, doc)):
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)
    walked = TreeBuilder(compiled.grammar, compiled._builder.trie, slices=False)
    built = dict(compiled._trees)
    assert built and any(tree.sliced for tree in built.values())
    for p, tree in built.items():
        assert _content(tree) == _content(walked.build(p)), p


def test_trees_built_by_two_threads_at_once_equal_trees_built_alone(vocab):
    """Two threads reaching the positions of one compiled grammar in
    opposite orders share its builder (serialized by its lock): every tree
    is the one a fresh builder gives."""
    import threading

    from constrain_domino import VocabTrie, build_tree

    compiled = ca.get("domino").compile(ca.Grammar(corpus.JSON_GRAMMAR), vocab)
    positions = compiled.grammar.positions
    trie = VocabTrie(vocab)
    alone = {p: _content(build_tree(compiled.grammar, p, trie)) for p in positions}
    seen: list[dict] = [{}, {}]

    def build(order, out):
        for p in order:
            out[p] = _content(compiled.tree(p))

    threads = [
        threading.Thread(target=build, args=(order, out))
        for order, out in zip((positions, positions[::-1]), seen, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen[0] == seen[1] == alone


def test_trees_beyond_their_byte_bound_are_dropped_and_rebuilt_alike(vocab, naive):
    """``tree_bytes`` bounds the masks a compiled grammar keeps in trees
    (least recently used first, the newest tree always kept): with room for
    about one tree, decoding rebuilds dropped trees and its masks stay the
    oracle's; the default keeps every tree of the grammar."""
    spec = ca.Grammar(corpus.JSON_GRAMMAR)
    roomy = ca.get("domino").compile(spec, vocab)
    info = roomy.precompute()
    assert roomy.tree_bytes_held == info["mask_bytes"]  # nothing dropped
    largest = max(roomy.tree(p).nbytes for p in roomy.grammar.positions)
    tight = ca.get("domino", tree_bytes=largest).compile(spec, vocab)
    oracle = naive.compile(spec, vocab)
    for doc in GRAMMARS["json"][1]:
        for path in _paths(vocab, oracle, [doc], "tree-bytes"):
            result = checks.compare_masks(tight, oracle, path)
            assert result.exact, result.describe(vocab)
            assert tight.tree_bytes_held <= 2 * largest
    tight.precompute()
    assert tight.tree_bytes_held <= 2 * largest < info["mask_bytes"]
    for position in roomy.grammar.positions:
        assert _content(tight.tree(position)) == _content(roomy.tree(position)), position
    with pytest.raises(ValueError, match="tree_bytes"):
        ca.get("domino", tree_bytes=-1)


def test_a_bitmask_filled_again_is_written_unchecked_but_not_kept_alive(vocab):
    """The bitmask a checker filled last is written without its checks the
    next time (the decoding loop's), held weakly: once the caller drops it,
    a bitmask of another width, dtype or kind is checked again, never
    mistaken for it."""
    import gc

    checker = ca.get("domino").compile(ca.Grammar(NESTED), vocab).checker()
    checker.update(vocab.encode("[[1"))
    want = checker.mask()
    words = want.words.shape[0]
    bitmask = np.full((2, words), -1, dtype=np.int32)
    for row in (0, 1, 0):
        checker.fill_mask(bitmask, row)
        assert ca.TokenMask(bitmask[row], vocab.size) == want
    with pytest.raises(IndexError):
        checker.fill_mask(bitmask, 2)
    del bitmask
    gc.collect()
    assert checker._exact() is None
    wide = np.full((1, words + 3), -1, dtype=np.int32)
    checker.fill_mask(wide, 0)
    assert ca.TokenMask(wide[0, :words], vocab.size) == want and not wide[0, words:].any()
    with pytest.raises(TypeError):
        checker.fill_mask(np.zeros((1, words), dtype=np.int64), 0)


def test_built_trees_leave_the_collectors_view(vocab):
    """A built tree is tuples of numbers and arrays, which Python's garbage
    collector stops tracking (lists it walks at every full collection, a
    list per node): decoding keeps hundreds of trees. The masks are the
    oracle's all the same (the other tests)."""
    import gc

    compiled = ca.get("domino").compile(ca.Grammar(corpus.JSON_GRAMMAR), vocab)
    checker = compiled.checker()
    bitmask = ca.allocate_bitmask(1, vocab.size)
    for token in vocab.encode('{"a": [1, "x"]}'):
        checker.fill_mask(bitmask, 0)
        checker.update([token])
    trees = list(compiled._trees.values())
    assert len(trees) > 3 and sum(tree.num_nodes for tree in trees) > len(trees)
    for _ in range(3):  # (a tuple is let go once what it holds is: one level a collection)
        gc.collect()
    for tree in trees:
        for part in (tree.children, *tree.children, tree.label, tree.free, tree.checked):
            assert type(part) is tuple and not gc.is_tracked(part)
        assert all(not gc.is_tracked(groups) for groups in tree.checked)
        assert not hasattr(tree, "__dict__")  # (slots: no dict per tree to walk)


def test_a_format_within_a_length_bound_is_walked_lazily_and_exact(vocab, naive):
    """An e-mail of at most N characters is the product of the format's
    automaton and the count's: at N = 1024 more states than any backend's
    bound when built whole (``CompileLimitExceeded`` on ``naive``), which
    ``domino``'s lazy automaton never builds; at N = 40, where the oracle
    can build it, the masks are the oracle's."""
    small = ca.JsonSchema({"type": "string", "format": "email", "maxLength": 40})
    compiled, oracle = ca.get("domino").compile(small, vocab), naive.compile(small, vocab)
    docs = ['"ada.lovelace@example.com"', '"a@b"', '"x+y@[127.0.0.1]"']
    for path in _paths(vocab, oracle, docs, "email"):
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)
    wide = ca.JsonSchema({"type": "string", "format": "email", "maxLength": 1024})
    with pytest.raises(ca.CompileLimitExceeded):
        naive.compile(wide, vocab)
    checker = ca.get("domino").compile(wide, vocab).checker()

    def whole(text: str) -> bool:
        tokens = [*vocab.encode(text), vocab.eos_id]
        return checker.validate(tokens) == len(tokens)

    assert whole('"ada@example.com"') and not whole('"ada.example.com"')
    assert whole('"' + "a" * 1020 + '@b.c"')  # 1,024 characters
    assert not whole('"' + "a" * 1021 + '@b.c"')


def test_positions_inside_a_long_count_share_a_tree_and_masks_stay_exact(vocab, naive):
    """A string of at most 120 characters has a state per count; a tree
    reads one token's bytes (at most 35 here), so every count a token
    cannot exhaust has the same tree: the positions inside the string
    share one (``tree_position``), and the masks are still the oracle's,
    near the end of the count too."""
    spec = ca.Regex(r'"[a-z ]{0,120}"')
    domino = ca.get("domino")
    compiled, oracle = domino.compile(spec, vocab), naive.compile(spec, vocab)
    docs = ['"' + "hello world " * 8 + '"', '"' + "ab" * 59 + '"', '"' + "z" * 120 + '"']
    for path in _paths(vocab, oracle, docs, "count"):
        result = checks.compare_masks(compiled, oracle, path)
        assert result.exact, result.describe(vocab)
    fresh = domino.compile(spec, vocab)
    checker = fresh.checker()
    bitmask = ca.allocate_bitmask(1, vocab.size)
    positions = set()
    for token in vocab.encode('"' + "hello world " * 6):
        checker.fill_mask(bitmask, 0)
        positions |= {(t, q) for _, t, q in checker.state}
        checker.update([token])
    assert len(positions) >= 20  # a position per count reached
    assert len(fresh._trees) <= 2  # the boundary and the inside of the string


CONCURRENT_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 60},
        "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}},
        "size": {"type": "integer"},
        "owner": {"type": "object", "properties": {"id": {"type": "string"}}},
    },
    "required": ["name"],
    "additionalProperties": {"type": "number"},
}
CONCURRENT_DOCS = (
    '{"name":"ada lovelace","tags":["red","blue"],"size":36}',
    '{"name":"charles","size":-4,"owner":{"id":"x7"},"extra":2.5}',
    '{"name":"grace","tags":[],"other":1e3}',
)


def test_checkers_of_one_compiled_schema_in_two_threads_give_the_oracles_masks(vocab, naive):
    """Two threads decode with checkers of one compiled JSON schema at once,
    from its first mask on (trees, masks and automaton states found
    concurrently, through the shared builder, caches and lazy automata):
    every mask of each is the oracle's for its own document. Four rounds,
    each on a fresh compile, the documents paired differently."""
    import threading

    spec = ca.JsonSchema(CONCURRENT_SCHEMA)
    oracle = naive.compile(spec, vocab)
    paths_ = [paths.longest_match(vocab, doc) for doc in CONCURRENT_DOCS]
    for path in paths_:  # documents of the schema, whole
        assert path and oracle.checker().validate([*path, vocab.eos_id]) == len(path) + 1
    wanted = [[m.words for m in checks.oracle_masks(oracle, path)] for path in paths_]

    def decode(compiled, path, out, start):
        checker = compiled.checker()
        bitmask = ca.allocate_bitmask(1, vocab.size)
        start.wait()
        for step in range(len(path) + 1):
            checker.fill_mask(bitmask, 0)
            out.append(bitmask[0].copy())
            if step < len(path):
                checker.update([path[step]])

    for pair in ((0, 1), (1, 2), (2, 0), (0, 0)):
        compiled = ca.get("domino").compile(spec, vocab)
        start = threading.Barrier(2)
        got: list[list[np.ndarray]] = [[], []]
        threads = [
            threading.Thread(target=decode, args=(compiled, paths_[i], out, start))
            for i, out in zip(pair, got, strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for i, rows in zip(pair, got, strict=True):
            assert len(rows) == len(wanted[i]), (pair, i)
            for step, (row, want) in enumerate(zip(rows, wanted[i], strict=True)):
                assert np.array_equal(row.view(np.uint32), want.view(np.uint32)), (pair, i, step)
