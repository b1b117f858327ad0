"""Token paths through a document: the ways a model may spell the same text.

Every path's token bytes concatenate to the document's UTF-8 bytes exactly.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

import constrain_api as ca


def natural(vocab: ca.Vocabulary, doc: str) -> list[int] | None:
    """The tokenizer's own encoding (``None`` when the vocabulary has no encoder)."""
    return vocab.encode(doc) if vocab.has_encoder else None


def _single_bytes(vocab: ca.Vocabulary) -> dict[bytes, int]:
    trie = vocab.trie()
    out = {}
    for b in range(256):
        node = trie.find(bytes([b]))
        if node is not None and trie.tokens_at(node).size:
            out[bytes([b])] = int(trie.tokens_at(node)[0])
    return out


def byte_by_byte(vocab: ca.Vocabulary, doc: str) -> list[int] | None:
    """One token per byte (``None`` if some byte has no token of its own)."""
    singles = _single_bytes(vocab)
    data = doc.encode()
    path = [singles.get(data[i : i + 1]) for i in range(len(data))]
    return None if None in path else path


def char_by_char(vocab: ca.Vocabulary, doc: str) -> list[int] | None:
    """One token per character where the vocabulary has it, else its bytes."""
    singles = _single_bytes(vocab)
    trie = vocab.trie()
    path: list[int] = []
    for ch in doc:
        data = ch.encode()
        node = trie.find(data)
        if node is not None and trie.tokens_at(node).size:
            path.append(int(trie.tokens_at(node)[0]))
            continue
        for i in range(len(data)):
            if data[i : i + 1] not in singles:
                return None
            path.append(singles[data[i : i + 1]])
    return path


def longest_match(vocab: ca.Vocabulary, doc: str) -> list[int] | None:
    """Greedy longest token at every position: rich in bridge tokens, which
    span terminals (``",``, ``{"``) and split characters."""
    trie = vocab.trie()
    data = doc.encode()
    path: list[int] = []
    i = 0
    while i < len(data):
        node, best = 0, None
        j = i
        while j < len(data):
            node = trie.child(node, data[j])
            if node is None:
                break
            j += 1
            if trie.tokens_at(node).size:
                best = (j, int(trie.tokens_at(node)[0]))
        if best is None:
            return None
        i, token = best
        path.append(token)
    return path


PATH_KINDS: dict[str, Callable[[ca.Vocabulary, str], list[int] | None]] = {
    "natural": natural,
    "bytes": byte_by_byte,
    "chars": char_by_char,
    "longest": longest_match,
}


def random_path(oracle: ca.Compiled, rng: random.Random, max_len: int) -> list[int]:
    """Tokens drawn uniformly from the oracle's masks (EOS excluded)."""
    checker = oracle.checker()
    eos = oracle.vocab.eos_ids
    path: list[int] = []
    for _ in range(max_len):
        allowed = [t for t in checker.mask().allowed_ids().tolist() if t not in eos]
        if not allowed:
            break
        token = rng.choice(allowed)
        checker.update([token])
        path.append(token)
    return path


def sample_paths(
    vocab: ca.Vocabulary,
    oracle: ca.Compiled,
    docs: Iterable[str],
    seed: str | int,
    random_count: int = 3,
    max_len: int = 20,
) -> list[list[int]]:
    """Paths for a backend's own tests: each document tokenized by longest
    match, naturally and character by character (where the vocabulary can),
    then ``random_count`` random paths of the oracle; empty paths dropped."""
    docs = list(docs)
    found = [longest_match(vocab, d) for d in docs]
    found += [natural(vocab, d) for d in docs] + [char_by_char(vocab, d) for d in docs]
    rng = random.Random(seed)
    found += [random_path(oracle, rng, max_len) for _ in range(random_count)]
    return [p for p in found if p]
