"""Grammars on the Llama-3 vocabulary: ``fst`` (pushdown automata composed
with T_V), ``domino`` (subterminal trees) and ``fsm`` (iterative parsing,
one outlines-core index per terminal) on the same documents: compile time
(fst: composition after T_V exists; domino: compile plus the precomputation
of every tree; fsm: every terminal's index, none cached), and the per-step
mask time along the conformance corpus's valid documents (p50/p90/p99),
first pass (rows, closures, unions built on first use) and second pass
(cached).

The documents are tokenized as Llama-3 does, except for ``fsm``, which
cannot follow tokens that span two terminals: its path is the greedy
longest-match tokenization among the tokens it allows (the same text, up to
where outlines-core allows no way on: after ``1.5`` in JSON, no ``e``).

Run with ``pytest benchmarks/bench_grammars.py --benchmark-only`` (needs
``../shared``); the figures are in plugins/fst/README.md and plugins/fsm/README.md.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from constrain_conformance.corpus import CASES

import constrain_api as ca

#: The grammars of the conformance corpus, with its valid documents.
GRAMMARS = {
    case.name: (case.spec.text, case.valid)
    for case in CASES
    if case.name in ("json", "c-subset", "xml-schema")
}


BACKENDS = ["fst", "domino", "fsm"]


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("grammar", sorted(GRAMMARS))
def test_compile(benchmark, llama3, grammar, name):
    spec = ca.Grammar(GRAMMARS[grammar][0])
    # fsm: no index cache, or every round after the first would read it
    backend = ca.get(name, cache_size=0) if name == "fsm" else ca.get(name)
    backend.compile(spec, llama3)  # per-vocabulary set-up (T_V, trie lists) out of the timing
    out = []

    def run():
        ca.clear_caches()  # the core's caches (lowerings, regex automata): a first compile
        out.append(backend.compile(spec, llama3))
        if name == "domino":
            out[-1].precompute()

    benchmark.pedantic(run, rounds=1 if name == "domino" else 3, iterations=1)
    benchmark.extra_info["states"] = out[-1].stats.states


def _path(name: str, compiled: ca.Compiled, doc: str) -> list[int]:
    """The Llama-3 tokenization, or for fsm the greedy longest match among
    the tokens it allows (it cannot follow tokens spanning two terminals),
    stopping where it allows none."""
    vocab = compiled.vocab
    if name != "fsm":
        return vocab.encode(doc)
    checker, data, path = compiled.checker(), doc.encode(), []
    while data:
        allowed = checker.mask().allowed_ids().tolist()
        fits = [t for t in allowed if (b := vocab.token_bytes(t)) and data.startswith(b)]
        if not fits:  # outlines-core's gap: after `1.5` (accepting) no `e` is allowed
            break
        best = max(fits, key=lambda t: len(vocab.token_bytes(t)))
        path.append(best)
        checker.update([best])
        data = data[len(vocab.token_bytes(best)) :]
    return path


@pytest.mark.parametrize("rerun", [False, True], ids=["first", "second"])
@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("grammar", sorted(GRAMMARS))
def test_mask_per_step(benchmark, llama3, grammar, name, rerun):
    text, docs = GRAMMARS[grammar]
    compiled = ca.get(name).compile(ca.Grammar(text), llama3)
    token_paths = [_path(name, compiled, doc) for doc in docs]
    compiled = ca.get(name).compile(ca.Grammar(text), llama3)  # nothing cached by _path
    bitmask = ca.allocate_bitmask(1, llama3.size)
    times: list[float] = []

    def walk(record):
        for path in token_paths:
            checker = compiled.checker()
            for token in path:
                start = time.perf_counter()
                checker.fill_mask(bitmask, 0)
                record.append(time.perf_counter() - start)
                checker.update([token])

    if rerun:
        walk([])
    benchmark.pedantic(walk, args=(times,), rounds=1, iterations=1)
    us = np.asarray(times) * 1e6
    for q in (50, 90, 99):
        benchmark.extra_info[f"p{q}_us"] = round(float(np.percentile(us, q)), 1)
    benchmark.extra_info["steps"] = len(times)
