"""Arcs as arrays: the ``const`` reader against pynini's iterator, and the
token automaton's per-state epsilon removal against OpenFst's, on FSTs shaped like a composition
(layered epsilon paths that merge, chains longer than the vectorized levels,
epsilon cycles) and on real compositions."""

from __future__ import annotations

import random

import pynini
import pytest
from constrain_fst import arcs as arcs_module
from constrain_fst.arcs import TokenAutomaton, _parse_const, fst_arcs
from constrain_fst.automata import ONE, prefix_acceptor

from constrain_api.automata import parse_regex


def _listed(fst: pynini.Fst) -> list[tuple[int, int, int, int]]:
    return sorted((s, a.ilabel, a.olabel, a.nextstate) for s in fst.states() for a in fst.arcs(s))


def _as_rows(found) -> list[tuple[int, int, int, int]]:
    cols = (found.source, found.ilabel, found.olabel, found.target)
    return sorted(zip(*(c.tolist() for c in cols), strict=True))


@pytest.mark.parametrize("pattern", ['"[^"\\n]{0,5}"', "(ab|c)*d", "a", "[a-z]+( [a-z]+)*"])
def test_fst_arcs_read_every_arc_and_final_state(pattern):
    fst = prefix_acceptor(parse_regex(pattern))
    fst.set_final(0, pynini.Weight.zero("tropical"))  # one state not final
    found = fst_arcs(fst)
    assert _as_rows(found) == _listed(fst) and found.num_states == fst.num_states()
    zero = pynini.Weight.zero("tropical")
    assert found.final.tolist() == [fst.final(s) != zero for s in fst.states()]
    assert found.start == fst.start()
    assert _as_rows(fst_arcs(fst.copy(), last_use=True)) == _listed(fst)  # no property scan
    # the const layout was read, not the iterator fallback
    assert _parse_const(_const(fst).write_to_string()) is not None
    # with symbol tables the layout differs: the iterator reads it, same arcs
    fst.set_input_symbols(pynini.SymbolTable())
    assert _parse_const(_const(fst).write_to_string()) is None
    assert _as_rows(fst_arcs(fst)) == _listed(fst)


def _const(fst):
    import pywrapfst

    return pywrapfst.convert(fst, "const")


def _same(tokens: TokenAutomaton, fst: pynini.Fst) -> bool:
    """Our epsilon removal accepts the same label strings as OpenFst's (all
    states final: as in a composition with a prefix acceptor)."""
    ours = pynini.Fst()
    for _ in range(int(tokens.token_states.max(initial=-1)) + 1):
        ours.set_final(ours.add_state())
    ours.set_start(tokens.start)
    for s in tokens.token_states.tolist():
        for label, nxt in zip(*(x.tolist() for x in tokens.arcs(s)), strict=True):
            ours.add_arc(s, pynini.Arc(label, label, ONE, nxt))
    reference = fst.copy()
    for s in reference.states():
        reference.set_final(s)
    reference.project("input").rmepsilon()
    return pynini.equivalent(pynini.determinize(ours), pynini.determinize(reference))


def _layered(seed: int, depth: int) -> pynini.Fst:
    """Roots joined by labelled arcs, each with a random DAG of epsilon
    paths below it (paths merge, some run ``depth`` deep) ending in labels
    back to a root: the shape of T_V composed with a byte DFA."""
    rng = random.Random(seed)
    fst = pynini.Fst()
    for _ in range(3):  # unreachable: the roots' numbers are not their positions
        fst.add_state()
    roots = [fst.add_state() for _ in range(4)]
    fst.set_start(roots[1])  # nor is the start the first
    for r in roots:
        fst.set_final(r)
        layer = [r]
        for _ in range(depth if r == roots[1] else rng.randint(1, 6)):
            nxt = [fst.add_state() for _ in range(rng.randint(1, 3))]
            for s in layer:
                for t in rng.sample(nxt, rng.randint(1, len(nxt))):  # merges
                    fst.add_arc(s, pynini.Arc(0, rng.randint(1, 9), ONE, t))
                if rng.random() < 0.7:
                    label = rng.randint(1, 50)
                    fst.add_arc(s, pynini.Arc(label, label, ONE, rng.choice(roots)))
            layer = nxt
        for s in layer:
            fst.add_arc(s, pynini.Arc(7, 7, ONE, rng.choice(roots)))
    return fst


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("depth", [3, 150])  # 150: past the vectorized levels
@pytest.mark.parametrize("eager", [False, True])
def test_epsilon_removal_equals_openfsts(seed, depth, eager):
    fst = _layered(seed, depth)
    tokens = TokenAutomaton(fst_arcs(fst), eager=eager)
    assert _same(tokens, fst)
    # the states a reader can be in: the start and the targets of labelled arcs
    labelled = {a.nextstate for s in fst.states() for a in fst.arcs(s) if a.ilabel}
    assert set(tokens.token_states.tolist()) == labelled | {fst.start()}


@pytest.mark.parametrize("eager", [False, True])
def test_epsilon_removal_on_real_compositions(monkeypatch, eager):
    acceptor = prefix_acceptor(parse_regex('"[a-z ]{0,6}(, [a-z]+)?"'))
    trie = pynini.union(*(pynini.cross(t, w) for t, w in _WORDS)).closure().optimize()
    composed = pynini.compose(trie, acceptor)
    reference = TokenAutomaton(fst_arcs(composed), eager=eager)
    assert _same(reference, composed)
    for name, value in [
        ("SMALL_LEVEL", 0),  # vectorized to the end
        ("SMALL_LEVEL", 10**9),  # walked from the start
        ("MAX_KEY", 0),  # sorted on three keys
    ]:
        with monkeypatch.context() as patch:
            patch.setattr(arcs_module, name, value)
            tokens = TokenAutomaton(fst_arcs(composed), eager=eager)
            for s in reference.token_states.tolist():
                for ours, theirs in zip(tokens.arcs(s), reference.arcs(s), strict=True):
                    assert ours.tolist() == theirs.tolist()


_WORDS = [("a", '"'), ("b", "ab"), ("c", "a"), ("d", " a"), ("e", ", "), ("f", 'b"'), ("g", "ba")]


def test_an_epsilon_cycle_is_walked_never_looped(monkeypatch):
    fst = pynini.Fst()
    a, b, c = fst.add_state(), fst.add_state(), fst.add_state()
    fst.set_start(a)
    fst.add_arc(a, pynini.Arc(0, 1, ONE, b))
    fst.add_arc(b, pynini.Arc(0, 1, ONE, a))
    fst.add_arc(b, pynini.Arc(3, 3, ONE, a))
    fst.add_arc(a, pynini.Arc(4, 4, ONE, c))
    assert _same(TokenAutomaton(fst_arcs(fst)), fst)  # the walk remembers its states
    monkeypatch.setattr(arcs_module, "SMALL_LEVEL", 0)  # levels only, until MAX_LEVELS
    monkeypatch.setattr(arcs_module, "MAX_LEVELS", 50)
    for eager in (False, True):
        tokens = TokenAutomaton(fst_arcs(fst), eager=eager)
        assert _same(tokens, fst)
        assert tokens.arcs(a)[0].tolist() == [3, 4]  # each arc once, however often reached


def test_arcs_are_distinct_and_sorted_and_the_empty_automaton():
    fst = pynini.Fst()
    a, b, c, d = (fst.add_state() for _ in range(4))
    fst.set_start(a)
    fst.add_arc(a, pynini.Arc(2, 2, ONE, c))
    fst.add_arc(a, pynini.Arc(0, 5, ONE, d))
    fst.add_arc(a, pynini.Arc(1, 1, ONE, b))
    fst.add_arc(d, pynini.Arc(2, 2, ONE, c))  # the same arc again, through d
    fst.add_arc(d, pynini.Arc(2, 2, ONE, b))  # a second target for label 2
    for eager in (False, True):
        tokens = TokenAutomaton(fst_arcs(fst), eager=eager)
        labels, targets = tokens.arcs(a)
        assert list(zip(labels.tolist(), targets.tolist(), strict=True)) == [
            (1, b),
            (2, b),
            (2, c),
        ]
        assert tokens.num_states() == 3 and tokens.num_arcs() == 3  # b and c have none
        assert [len(x) for x in tokens.arcs(d)] == [2, 2]  # not a token state, still read
    empty = TokenAutomaton(fst_arcs(pynini.Fst()))
    assert empty.start == -1 and empty.num_states() == 0 and empty.num_arcs() == 0
