"""TokenTrie: every array checked against a brute-force model of the prefix tree."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from constrain_api.trie import TokenTrie
from constrain_api.vocabulary import Vocabulary


def check_against_brute_force(trie: TokenTrie, pairs: list[tuple[int, bytes]]) -> None:
    """Preorder with byte-ordered children is the lexicographic order of the prefixes."""
    prefixes = sorted({b[:k] for _, b in pairs for k in range(len(b) + 1)} | {b""})
    node_of = {p: n for n, p in enumerate(prefixes)}
    n = len(prefixes)
    probe = sorted({x for _, b in pairs for x in b} | {0, 1, 97, 255})
    assert trie.num_nodes == len(trie) == n
    assert trie.num_tokens == len(pairs)
    for arr, dtype, length in [
        (trie.edge_byte, np.uint8, n),
        (trie.depth, np.int32, n),
        (trie.parent, np.int32, n),
        (trie.subtree_end, np.int32, n),
        (trie.token_offsets, np.int32, n + 1),
        (trie.token_ids, np.int32, len(pairs)),
    ]:
        assert arr.dtype == dtype and arr.shape == (length,)
        assert not arr.flags.writeable
    for node, p in enumerate(prefixes):
        assert trie.prefix(node) == p
        assert trie.depth[node] == len(p)
        if node == 0:
            assert trie.parent[0] == -1 and trie.edge_byte[0] == 0
        else:
            assert trie.parent[node] == node_of[p[:-1]]
            assert trie.edge_byte[node] == p[-1]
        # the subtree is the run of following prefixes that extend p
        end = node + 1
        while end < n and prefixes[end].startswith(p):
            end += 1
        assert trie.subtree_end[node] == end
        assert trie.tokens_at(node).tolist() == sorted(i for i, b in pairs if b == p)
        assert sorted(trie.tokens_under(node).tolist()) == sorted(
            i for i, b in pairs if b.startswith(p)
        )
        assert trie.find(p) == node
        kids = [node_of[q] for q in prefixes if len(q) == len(p) + 1 and q.startswith(p)]
        assert trie.children(node) == kids
        for byte in probe:
            want = node_of.get(p + bytes([byte]))
            assert trie.child(node, byte) == want
    assert trie.token_offsets[0] == 0 and trie.token_offsets[-1] == len(pairs)
    assert np.all(np.diff(trie.token_offsets) >= 0)
    # preorder: parents come first, subtrees nest
    assert np.all(trie.parent[1:] < np.arange(1, n))
    assert np.all(trie.subtree_end[trie.parent[1:]] >= trie.subtree_end[1:])


def test_small_handmade():
    pairs = [
        (0, b"ab"),
        (1, b"a"),
        (2, b"b"),
        (3, b"ab"),  # duplicate bytes
        (4, b"abc"),
        (5, b"\xff"),
        (6, b"\x00\x00"),
        (7, b"ba"),
    ]
    trie = TokenTrie.build(pairs)
    check_against_brute_force(trie, pairs)
    assert trie.prefix(trie.find(b"ab")) == b"ab"
    assert trie.tokens_at(trie.find(b"ab")).tolist() == [0, 3]
    assert trie.tokens_under(trie.find(b"a")).tolist() == [1, 0, 3, 4]
    assert trie.find(b"abd") is None and trie.find(b"c") is None
    assert trie.find(b"\x00").__class__ is int and len(trie.tokens_at(trie.find(b"\x00"))) == 0
    assert trie.max_depth == 3


def test_mapping_and_sequence_agree():
    tokens = {5: b"x", 1: b"xy", 3: b"y", 0: b"xy"}
    a = TokenTrie.build(tokens)
    b = TokenTrie.build(list(tokens.items()))
    for name in ("edge_byte", "depth", "parent", "subtree_end", "token_offsets", "token_ids"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert a.tokens_at(a.find(b"xy")).tolist() == [0, 1]


def test_empty_and_degenerate():
    empty = TokenTrie.build([])
    assert empty.num_nodes == 1 and empty.num_tokens == 0
    assert empty.subtree_end.tolist() == [1] and empty.tokens_under(0).tolist() == []
    assert empty.find(b"") == 0 and empty.find(b"a") is None and empty.children(0) == []
    root_token = TokenTrie.build([(3, b""), (1, b"")])
    assert root_token.num_nodes == 1 and root_token.tokens_at(0).tolist() == [1, 3]
    chain = [(i, b"a" * (i + 1)) for i in range(40)]  # longer than the LCP window
    check_against_brute_force(TokenTrie.build(chain), chain)
    long_shared = [(0, b"q" * 50 + b"a"), (1, b"q" * 50 + b"b"), (2, b"q" * 20)]
    check_against_brute_force(TokenTrie.build(long_shared), long_shared)


def test_bad_nodes():
    trie = TokenTrie.build([(0, b"a")])
    for method in (trie.tokens_at, trie.tokens_under, trie.prefix, trie.children):
        with pytest.raises(IndexError):
            method(2)
        with pytest.raises(IndexError):
            method(-1)


def test_random_vocabularies_seeded():
    rng = random.Random(0)
    for _ in range(30):
        n = rng.randint(1, 60)
        alphabet = rng.choice([b"ab", b"abc\x00", bytes(range(256))])
        raw = [bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(n)]
        ids = list(range(n))
        rng.shuffle(ids)
        pairs = list(zip(ids, raw, strict=True))
        check_against_brute_force(TokenTrie.build(pairs), pairs)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.binary(min_size=0, max_size=7).map(lambda b: bytes(x % 3 * 127 for x in b))
        | st.binary(min_size=1, max_size=5),
        max_size=30,
    ),
    st.randoms(use_true_random=False),
)
def test_property_random_small_vocabularies(raw: list[bytes], rnd: random.Random):
    ids = list(range(len(raw)))
    rnd.shuffle(ids)
    pairs = list(zip(ids, raw, strict=True))
    check_against_brute_force(TokenTrie.build(pairs), pairs)


def test_vocabulary_trie_matches_brute_force():
    vocab = Vocabulary.from_list(
        ["a", "ab", "abc", "b", "é", b"\xc3", "<s>", "</s>", "ab", " a"],
        eos="</s>",
        special=["<s>"],
    )
    pairs = [(i, vocab.token_bytes(i)) for i in vocab.normal_ids().tolist()]
    check_against_brute_force(vocab.trie(), pairs)


@pytest.mark.shared
def test_llama3_trie(shared_file):
    vocab = Vocabulary.from_llama3(shared_file("vocab/llama3/tokenizer.model"))
    start = time.perf_counter()
    trie = vocab.trie()
    seconds = time.perf_counter() - start
    print(f"llama3 trie: {trie.num_nodes} nodes, built in {seconds:.2f} s")
    tokens = [vocab.token_bytes(i) for i in range(128000)]
    prefixes = {t[:k] for t in tokens for k in range(1, len(t) + 1)}
    assert trie.num_nodes == len(prefixes) + 1
    assert trie.num_tokens == 128000
    assert np.array_equal(np.sort(trie.tokens_under(0)), vocab.normal_ids())
    assert trie.subtree_end[0] == trie.num_nodes
    assert trie.max_depth == max(len(t) for t in tokens)
    # every token sits at the node of its bytes; spot-check a deterministic sample
    rng = random.Random(3)
    for i in rng.sample(range(128000), 2000):
        node = trie.find(tokens[i])
        assert node is not None and i in trie.tokens_at(node).tolist()
        assert trie.prefix(node) == tokens[i]
    node = trie.find(b" the")
    assert all(vocab.token_bytes(i).startswith(b" the") for i in trie.tokens_under(node).tolist())
    assert len(trie.tokens_under(node)) == sum(t.startswith(b" the") for t in tokens)
    # node -> token -> node through the flat arrays
    owner = np.repeat(np.arange(trie.num_nodes), np.diff(trie.token_offsets))
    assert np.array_equal(trie.depth[owner], [len(tokens[i]) for i in trie.token_ids.tolist()])
