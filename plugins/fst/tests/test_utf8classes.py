"""UTF-8 class groups: tokens that differ only inside the non-ASCII byte
intervals share one spelling in T_V, where (and only where) the acceptor
treats each interval alike at every state; masks stay the oracle's."""

from __future__ import annotations

import random

import numpy as np
import pytest
from constrain_conformance import checks, paths
from constrain_fst.automata import prefix_acceptor
from constrain_fst.utf8classes import uniform
from constrain_fst.wildcards import byte_table

import constrain_api as ca
from constrain_api.automata import parse_regex

TOKENS = [
    "x", "a", "b", '"', "xa", '"x', 'x"', "é", "è", "èb", "中", "文", "中文", "x中",
    b"\xe4", b"\xe5", b"\xe4\xb8", b"\xe5\xb9", b"\xad", b"\xbf", b"\x80", b"\xb8\xad",
    b"x\xe4", b'\xad"', b"\xc3", b"\xa9", "\n", "<eos>",
]  # fmt: skip


@pytest.fixture(scope="module")
def vocab() -> ca.Vocabulary:
    return ca.Vocabulary.from_list(TOKENS, eos="<eos>")


def _uniform(pattern: str) -> bool:
    return uniform(byte_table(prefix_acceptor(parse_regex(pattern)))[0])


def test_uniform_means_each_interval_acts_as_one_byte():
    assert _uniform('"[^"\\n]*"') and _uniform(".{0,5}") and _uniform("abc")
    # 'é' (C3 A9) and 'è' (C3 A8): A9 and A8 share an interval but not a target
    assert not _uniform("\u00e9a|\u00e8b")
    assert not _uniform("[\u4e00-\u4e2d]+")  # a range ending inside an interval


PATTERNS = {
    '"[^"\\n]{0,6}"': True,
    '"[^"]*"': True,
    ".{0,4}x": True,
    '[^中"]+': False,  # 中 against the other characters: not uniform
    "\u00e9a|\u00e8b|x": False,
    "[a-z]+": True,  # nothing non-ASCII is live: trivially uniform
}


@pytest.mark.parametrize("pattern", PATTERNS)
def test_masks_equal_the_oracles(vocab, pattern):
    spec = ca.Regex(pattern)
    oracle = ca.get("naive").compile(spec, vocab)
    compiled = ca.get("fst").compile(spec, vocab)
    assert compiled.stats.extra["utf8_classes"] is PATTERNS[pattern]
    rng = random.Random(pattern)
    for _ in range(40):
        result = checks.compare_masks(compiled, oracle, paths.random_path(oracle, rng, 8))
        assert result.exact, result.describe(vocab)


def test_tokens_sharing_a_spelling_share_a_group(vocab):
    compiled = ca.get("fst").compile(ca.Regex('"[^"\\n]{0,6}"'), vocab)
    of = compiled.wild.class_group_of
    ids = {t: TOKENS.index(t) for t in (b"\xe4\xb8", b"\xe5\xb9", b"\xad", b"\xbf", b"\x80")}
    assert of[ids[b"\xe4\xb8"]] == of[ids[b"\xe5\xb9"]] != 0  # [E1-EC][A0-BF]
    assert of[ids[b"\xad"]] == of[ids[b"\xbf"]] != 0  # [A0-BF]
    assert of[ids[b"\x80"]] != of[ids[b"\xad"]]  # [80-8F] is another interval
    # a group is allowed or refused as one, and each member moves where its bytes lead
    checker = compiled.checker()
    checker.update([TOKENS.index('"')])
    mask = checker.mask()
    assert ids[b"\xe4\xb8"] in mask and ids[b"\xe5\xb9"] in mask and ids[b"\xad"] not in mask
    twin = checker.fork()
    checker.update([ids[b"\xe4\xb8"], ids[b"\xad"]])  # 中, one character
    twin.update([ids[b"\xe5\xb9"], ids[b"\xbf"]])  # 平, one character
    assert checker.mask() == twin.mask() and TOKENS.index('"') in checker.mask()


def test_off_by_option_and_on_disk(vocab, tmp_path):
    spec = ca.Regex('"[^"\\n]{0,6}"')
    off = ca.get("fst", utf8_classes=False).compile(spec, vocab)
    assert off.stats.extra["utf8_classes"] is False and not off.wild.class_groups
    on = ca.get("fst", cache_dir=tmp_path).compile(spec, vocab)
    again = ca.get("fst", cache_dir=tmp_path).compile(spec, vocab)  # read from disk
    assert on.wild.class_groups.keys() == again.wild.class_groups.keys()
    for label, members in on.wild.class_groups.items():
        assert np.array_equal(np.sort(members), np.sort(again.wild.class_groups[label]))
    assert np.array_equal(on.wild.class_group_of, again.wild.class_group_of)
    a, b, c = on.checker(), again.checker(), off.checker()
    for token in ('"', "中", "x中", 'x"'):
        assert a.mask() == b.mask() == c.mask()
        for checker in (a, b, c):
            checker.update([TOKENS.index(token)])
