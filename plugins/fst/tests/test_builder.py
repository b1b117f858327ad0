"""The array-built FSTs: the const writer against the arcs it was given, and
the tries against a plain reading of their spellings (prefixes shared per
entry, prefix tokens, duplicates, spellings longer than the array width,
groups of equal spellings under a label map)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from constrain_fst import builder as builder_module
from constrain_fst.arcs import fst_arcs
from constrain_fst.builder import FstBuilder, add_tries


def test_the_const_writer_gives_back_what_was_added():
    b = FstBuilder()
    states = [b.add_state() for _ in range(4)]
    b.set_start(states[2])
    b.set_final(states[0])
    b.set_final(states[3])
    b.add_arc(2, 0, 5, 1)
    b.add_arc(1, 7, 8, 0)
    b.add_arcs([2, 3], [9, 0], [0, 0], [3, 3])
    arcs = fst_arcs(b.fst())
    assert arcs.start == 2 and arcs.num_states == 4
    assert arcs.final.tolist() == [True, False, False, True]
    columns = (arcs.source, arcs.ilabel, arcs.olabel, arcs.target)
    got = sorted(zip(*(a.tolist() for a in columns), strict=True))
    assert got == [(1, 7, 8, 0), (2, 0, 5, 1), (2, 9, 0, 3), (3, 0, 0, 3)]


def _paths(fst, entry: int, exit: int) -> dict[int, list[tuple[int, ...]]]:
    """label → the output strings of its paths from ``entry`` to ``exit``
    (epsilon-input arcs, then one arc reading the label)."""
    out: dict[int, list[tuple[int, ...]]] = {}
    todo = [(entry, ())]
    while todo:
        state, written = todo.pop()
        for arc in fst.arcs(state):
            here = (*written, arc.olabel)
            if arc.ilabel == 0:
                todo.append((arc.nextstate, here))
            else:
                assert arc.nextstate == exit
                out.setdefault(arc.ilabel, []).append(here)
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("width", [4, 32])  # 4: many spellings take the long path
def test_tries_spell_every_token_once_and_share_prefixes(monkeypatch, seed, width):
    monkeypatch.setattr(builder_module, "WIDTH", width)
    rng = random.Random(seed)
    alphabet = b"ab\x00\xff"
    spellings = [bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 7))) for _ in range(60)]
    spellings += [spellings[0], spellings[1][:1]]  # a duplicate, a prefix
    b = FstBuilder()
    root, other, exit = b.add_state(), b.add_state(), b.add_state()
    b.set_start(root)
    entries = [root if i % 3 else other for i in range(len(spellings))]
    labels = list(range(1, len(spellings) + 1))
    groups, nxt = add_tries(b, np.array(entries), exit, spellings, labels)
    assert groups == {} and nxt is None
    fst = b.fst()
    for entry in (root, other):
        found = _paths(fst, entry, exit)
        expected = {
            label: [tuple(x + 1 for x in spelling)]
            for label, spelling, e in zip(labels, spellings, entries, strict=True)
            if e == entry
        }
        assert found == expected
    # short spellings share their prefixes: one state per distinct proper prefix
    short = {(e, s[:k]) for e, s in zip(entries, spellings, strict=True) for k in range(1, len(s))}
    long = sum(len(s) - 1 for s in spellings if len(s) > width)
    if width == 32:
        assert fst.num_states() == 3 + len(short)
    else:
        assert fst.num_states() <= 3 + len(short) + long


def test_equal_spellings_under_a_label_map_share_a_group():
    mapping = np.arange(1, 257, dtype=np.int64)
    mapping[0x80:0xC0] = 1000  # every continuation byte alike
    spellings = [b"x\x80", b"x\x81", b"x\x82", b"y\x80", b"x", b"x\x80\x80"]
    b = FstBuilder()
    root = b.add_state()
    b.set_start(root)
    labels = [11, 12, 13, 14, 15, 16]
    groups, nxt = add_tries(
        b, np.zeros(6, np.int64), root, spellings, labels, mapping, next_group=100
    )
    assert nxt == 101 and set(groups) == {100}
    assert sorted(groups[100].tolist()) == [0, 1, 2]  # positions in spellings
    found = _paths(b.fst(), root, root)
    assert found[100] == [(ord("x") + 1, 1000)]
    assert found[14] == [(ord("y") + 1, 1000)] and found[15] == [(ord("x") + 1,)]
    assert found[16] == [(ord("x") + 1, 1000, 1000)] and 11 not in found


def test_prefixes_are_never_shared_across_entries():
    b = FstBuilder()
    first, second, exit = b.add_state(), b.add_state(), b.add_state()
    b.set_start(first)
    spellings = [b"ab", b"ac", b"ab", b"ac"]  # sorted, the groups meet at "ac" | "ab"
    add_tries(b, np.array([first, first, second, second]), exit, spellings, [1, 2, 3, 4])
    fst = b.fst()
    assert _paths(fst, first, exit) == {1: [(98, 99)], 2: [(98, 100)]}
    assert _paths(fst, second, exit) == {3: [(98, 99)], 4: [(98, 100)]}
