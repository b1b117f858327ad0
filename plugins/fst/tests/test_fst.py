"""The ``fst`` backend against the oracle: exact masks at every step of random
oracle paths, on a trained BPE (with and without wildcard terminals) and on
Llama-3 (Koo et al.'s five workloads)."""

from __future__ import annotations

import json
import random
from unittest import mock

import numpy as np
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
from constrain_fst.automata import prefix_acceptor
from constrain_fst.wildcards import byte_table

import constrain_api as ca
from constrain_api.automata import parse_regex

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


@pytest.mark.parametrize("name", ["quoted-text", "json-object", "json-string", "email-ish"])
def test_masks_equal_the_oracles_without_wildcards(naive, name):
    vocab = small_vocabulary()
    spec = SPECS[name]
    plain = ca.get("fst", wildcards=False).compile(spec, vocab)
    assert plain.stats.extra["wildcard_classes"] == 0
    _assert_same_masks(plain, naive.compile(spec, vocab), vocab, name, 3)


@pytest.mark.shared
@pytest.mark.parametrize(
    "name", ["multiple-choice", "iso-date-time", "ipv4", "number", "quoted-text", "json-object"]
)
def test_masks_equal_the_oracles_on_llama3(fst, naive, name):
    """All five of Koo et al.'s workloads, the wide classes through wildcards."""
    try:
        vocab = real_vocabulary("llama3")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    spec = SPECS[name]
    compiled = fst.compile(spec, vocab)
    if name in ("quoted-text", "json-object"):
        assert compiled.stats.extra["wildcard_classes"] >= 1
    _assert_same_masks(compiled, naive.compile(spec, vocab), vocab, name, 2)


def test_refusals_and_limits(fst):
    vocab = small_vocabulary()
    with pytest.raises(ca.UnsupportedConstraint, match="fst"):
        fst.compile(ca.Regex(r"(ab)\1"), vocab)
    with pytest.raises(ca.UnsupportedConstraint, match="left recursion"):
        fst.compile(ca.Grammar('start: a "x" | "y"\na: start "z"'), vocab)
    with pytest.raises(ca.CompileLimitExceeded):
        fst.compile(ca.Regex("(a|b)*a(a|b){14}"), vocab, max_states=1000)
    with pytest.raises(TypeError, match="unknown compile options"):
        fst.compile(ca.Regex("a"), vocab, k=1)
    # '.' before 'foo' is not uniform ('f' goes elsewhere): no wildcard covers it
    with pytest.raises(ca.CompileLimitExceeded, match="no wildcard class covers"):
        fst.compile(ca.Regex(".*foo"), vocab, max_composed_arcs=20)


def test_openfst_stops_at_the_state_bound_before_building_more(fst):
    """OpenFst's calls cannot be interrupted: determinization runs with
    max_states as its state threshold (2^18 states of this regex were once
    built before the bound was checked: 48 s for 2^21), and a counted
    repetition is sized before pynini copies it (a string of 10^6
    characters once took 8 GB)."""
    vocab = small_vocabulary()
    with pytest.raises(ca.CompileLimitExceeded, match="determinizing") as e:
        fst.compile(ca.Regex("(a|b)*a(a|b){17}"), vocab, max_states=5000)
    assert e.value.value == 5001
    with pytest.raises(ca.CompileLimitExceeded, match="counted repetition"):
        fst.compile(ca.JsonSchema({"type": "string", "minLength": 10**6}), vocab)
    spec = ca.Regex("(a|b)*a(a|b){6}")  # 128 states: within the bound, the same language
    compiled = fst.compile(spec, vocab, max_states=200)
    _assert_same_masks(compiled, ca.get("naive").compile(spec, vocab), vocab, "(a|b)*a(a|b){6}", 2)


def _openfst_stops(monkeypatch) -> list:
    """The thresholds at which OpenFst's determinization is stopped
    (``TooLargeForOpenFst`` raised, the core's automaton standing in)."""
    import constrain_fst.automata as automata

    stopped: list = []
    real = automata.TooLargeForOpenFst

    class Spy(real):
        def __init__(self, threshold):
            stopped.append(threshold)
            super().__init__(threshold)

    monkeypatch.setattr(automata, "TooLargeForOpenFst", Spy)
    return stopped


def test_past_openfsts_work_bound_the_cores_automaton_stands_in(fst, monkeypatch):
    """Determinization work grows with input x output states: past
    DETERMINIZE_WORK OpenFst is stopped and the core's minimal DFA (which
    checks the compile budget per state) is used; the masks stay the
    oracle's. (A generated 31,601-state NFA once kept OpenFst busy past 60 s.)"""
    import constrain_fst.automata as automata

    vocab = small_vocabulary()
    spec = ca.Regex("(a|b)*a(a|b){5}(c|ab)*")
    stopped = _openfst_stops(monkeypatch)
    oracle = ca.get("naive").compile(spec, vocab)
    ca.clear_caches()
    fst.compile(spec, vocab)
    assert not stopped  # within both bounds: OpenFst builds it all
    for name, value, options in [
        ("DETERMINIZE_WORK", 200, {}),
        # pairs that fit in what is left of max_seconds (a pair costs 1 s here)
        ("SECONDS_PER_PAIR", 1.0, {"max_seconds": 100}),
    ]:
        with monkeypatch.context() as patch:
            patch.setattr(automata, name, value)
            ca.clear_caches()
            compiled = fst.compile(spec, vocab, **options)
        assert stopped, f"{name}: OpenFst was not stopped, the fallback was not exercised"
        _assert_same_masks(compiled, oracle, vocab, spec.pattern, 3)
        stopped.clear()


def test_a_determinization_stage_projected_past_the_budget_stops_openfst(fst, monkeypatch):
    """Past STAGE_PAIRS, OpenFst determinizes in stages of 4x the states,
    each timed: a stage whose projection passes what is left of
    max_seconds is not begun (OpenFst cannot be stopped once it runs; a
    generated regex's single call ran a 30 s compile to 49 s), and the
    core's automaton stands in, the oracle's masks. Here every stage
    "takes" 20 s by the clock the stages read."""
    import itertools

    import constrain_fst.automata as automata

    vocab = small_vocabulary()
    spec = ca.Regex("(a|b)*a(a|b){5}(c|ab)*")
    stopped = _openfst_stops(monkeypatch)
    ticks = itertools.count(step=20.0)
    monkeypatch.setattr(automata, "STAGE_PAIRS", 50)
    monkeypatch.setattr(automata, "_clock", lambda: next(ticks))
    oracle = ca.get("naive").compile(spec, vocab)
    ca.clear_caches()
    compiled = fst.compile(spec, vocab, max_seconds=100)
    assert stopped, "no stage was stopped: the fallback was not exercised"
    _assert_same_masks(compiled, oracle, vocab, spec.pattern, 3)
    # with time to spare, the stages run on to the whole automaton
    stopped.clear()
    monkeypatch.setattr(automata, "_clock", lambda: 0.0)
    ca.clear_caches()
    compiled = fst.compile(spec, vocab, max_seconds=100)
    assert not stopped
    _assert_same_masks(compiled, oracle, vocab, spec.pattern, 3)


def test_the_composition_estimate_counts_a_shared_walk_once(fst):
    """Tokens spelled in bytes from two wide states whose first byte leads to
    one same state share the composition's pairs past that byte: counted
    once; where the first byte leads to different states, twice."""
    vocab = small_vocabulary()
    compiler = fst.compiler(vocab)
    wild = compiler.detokenizer()[1]  # no wildcard classes: every token in bytes
    none = np.zeros(3, dtype=np.int32)

    def estimate(table):
        with pytest.raises(ca.CompileLimitExceeded) as e:
            compiler._check_composition(table, none, none, none, wild, 0)
        return e.value.value

    table = np.full((3, 256), -1, dtype=np.int32)
    table[:2] = 2  # states 0 and 1: every byte to state 2
    shared = estimate(table)
    table[1] = 1  # state 1: every byte to itself
    assert estimate(table) == 2 * shared
    assert shared == len(vocab.normal_ids())  # each normal token once
    table[1, ord("a")] = -1  # a dead first byte starts no walk
    starting_a = sum(vocab.token_bytes(t)[:1] == b"a" for t in vocab.normal_ids().tolist())
    assert starting_a and estimate(table) == 2 * shared - starting_a


def test_the_detokenizer_is_built_once_per_vocabulary_and_class_set():
    backend = ca.get("fst")
    vocab = small_vocabulary()
    compiler = backend.compiler(vocab)
    backend.compile(ca.Regex("a+"), vocab)
    detok = compiler.detokenizer()
    backend.compile(ca.Regex("b+"), vocab)
    assert backend.compiler(vocab) is compiler and compiler.detokenizer() is detok
    classes = compiler._wildcard_classes(byte_table(prefix_acceptor(parse_regex("[^x]*")))[0])
    assert classes
    assert compiler.detokenizer(classes) is not detok
    assert compiler.detokenizer(classes) is compiler.detokenizer(classes)
    info = compiler.cache_info()["detokenizers"]
    assert info.entries >= 2 and info.nbytes > 0 and info.hits >= 3
    compiler.clear_cache()
    assert compiler.detokenizer() is not detok  # built anew


def test_an_empty_language_is_refused(fst):
    with pytest.raises(ca.ConstraintError, match="no text satisfies it"):
        fst.compile(ca.Regex("a[^\\x00-\\U0010ffff]"), small_vocabulary())


def test_the_detokenizer_cache_on_disk(tmp_path, naive):
    vocab = small_vocabulary()
    spec = SPECS["quoted-text"]
    first = ca.get("fst", cache_dir=tmp_path).compile(spec, vocab)
    files = sorted(p.suffix for p in tmp_path.iterdir())
    assert files == [".fst", ".npz", ".sha256"]  # OpenFst's format, a pickle-free npz, digests
    with np.load(next(tmp_path.glob("*.npz")), allow_pickle=False) as data:
        assert data["chars"].shape == (first.stats.extra["wildcard_classes"], vocab.size)
    # a fresh backend reads it back instead of building it, and masks agree
    backend = ca.get("fst", cache_dir=tmp_path)
    with mock.patch("constrain_fst.backend.wildcard_detokenizer") as build:
        again = backend.compile(spec, vocab)
    build.assert_not_called()
    assert first.wild.lead_groups  # tokens such as `a"` inside the quotes
    assert np.array_equal(again.wild.lead_group_of, first.wild.lead_group_of)
    assert again.wild.marks == first.wild.marks and again.wild.stays == first.wild.stays
    _assert_same_masks(again, naive.compile(spec, vocab), vocab, "disk", 3)
    # a damaged file is ignored and rebuilt, never trusted
    next(tmp_path.glob("*.fst")).write_bytes(b"not an fst")
    rebuilt = ca.get("fst", cache_dir=tmp_path).compile(spec, vocab)
    _assert_same_masks(rebuilt, naive.compile(spec, vocab), vocab, "damaged", 2)


def _tampered_cache_is_rebuilt(tmp_path, spec, vocab, naive, tamper) -> None:
    ca.get("fst", cache_dir=tmp_path).compile(spec, vocab)
    tamper(tmp_path)
    with mock.patch(
        "constrain_fst.backend.wildcard_detokenizer",
        side_effect=__import__("constrain_fst.backend").backend.wildcard_detokenizer,
    ) as build:
        rebuilt = ca.get("fst", cache_dir=tmp_path).compile(spec, vocab)
    build.assert_called_once()  # not read from the tampered files
    _assert_same_masks(rebuilt, naive.compile(spec, vocab), vocab, "tampered", 2)


def _flip_a_byte(folder):
    path = next(folder.glob("*.fst"))
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40  # past the header: OpenFst itself would read it
    path.write_bytes(bytes(data))


def _huge_header_count(folder):
    path = next(folder.glob("*.fst"))
    data = bytearray(path.read_bytes())
    data[-64:-56] = (2**62).to_bytes(8, "little")  # once made OpenFst throw bad_alloc
    path.write_bytes(bytes(data))


def _another_valid_fst(folder):
    import pynini

    next(folder.glob("*.fst")).write_bytes(pynini.accep("x").write_to_string())


def _rewrite_the_tables(folder):
    path = next(folder.glob("*.npz"))
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["chars"] = np.zeros_like(arrays["chars"])
    np.savez(path, **arrays)


def _vouched_for_other_inputs(folder):
    """The files intact, their digests file made for other inputs (another
    vocabulary's size, classes or format under this name)."""
    path = next(folder.glob("*.sha256"))
    digests = json.loads(path.read_text())
    digests["inputs"] = "0" * len(digests["inputs"])
    path.write_text(json.dumps(digests))


@pytest.mark.parametrize(
    "tamper",
    [
        _flip_a_byte,
        _huge_header_count,
        _another_valid_fst,
        _rewrite_the_tables,
        _vouched_for_other_inputs,
    ],
)
def test_a_tampered_disk_cache_is_rebuilt_not_read(tmp_path, naive, tamper):
    """The files are parsed only when their digests match and vouch for
    this build's inputs: flipped bytes and huge counts once aborted the
    process, a different valid transducer in the file's place was used
    (masks silently changed)."""
    _tampered_cache_is_rebuilt(tmp_path, SPECS["quoted-text"], small_vocabulary(), naive, tamper)


def test_a_token_leaving_a_state_twice_is_an_error_not_a_dropped_arc():
    """The token automaton is deterministic by construction; were it not,
    reading its arcs into a dictionary would silently drop one."""
    import pynini
    from constrain_fst.arcs import TokenAutomaton, fst_arcs
    from constrain_fst.automata import ONE

    vocab = small_vocabulary()
    compiled = ca.get("fst").compile(ca.Regex("ab|ac"), vocab)
    fst = pynini.Fst()
    a, b, c = (fst.add_state() for _ in range(3))
    fst.set_start(a)
    fst.add_arc(a, pynini.Arc(6, 6, ONE, b))  # token 5 to b ...
    fst.add_arc(a, pynini.Arc(6, 6, ONE, c))  # ... and to c
    compiled.automaton = TokenAutomaton(fst_arcs(fst))
    with pytest.raises(AssertionError, match="not deterministic"):
        compiled.checker().mask()
