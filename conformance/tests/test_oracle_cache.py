"""The oracle's masks are computed once per path and shared by every backend."""

from __future__ import annotations

from constrain_conformance import checks, corpus, paths

import constrain_api as ca


class CountingCompiled:
    """An oracle ``Compiled`` that counts the checkers it hands out."""

    def __init__(self, inner: ca.Compiled):
        self.inner, self.spec, self.vocab, self.checkers = inner, inner.spec, inner.vocab, 0

    def checker(self) -> ca.Checker:
        self.checkers += 1
        return self.inner.checker()


def test_oracle_masks_are_walked_once_and_stay_right():
    vocab = corpus.small_vocabulary()
    spec = ca.Regex(corpus.DATE_TIME + "!")  # a spec no other test caches
    oracle = CountingCompiled(ca.get("naive").compile(spec, vocab))
    path = paths.natural(vocab, "2024-01-31T12:00:00Z!")
    first = checks.oracle_masks(oracle, path)
    second = checks.oracle_masks(oracle, path)
    assert oracle.checkers == 1 and first == second and len(first) == len(path) + 1
    walk = oracle.inner.checker()
    for step, token in enumerate(path):
        assert first[step] == walk.mask()
        walk.update([token])
    assert checks.compare_masks(ca.get("fst").compile(spec, vocab), oracle, path).exact
