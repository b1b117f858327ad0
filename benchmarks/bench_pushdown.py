"""Grammars on the Llama-3 vocabulary, ``fst`` (pushdown automata composed
with T_V) beside ``domino`` (subterminal trees) on the same documents:
compile time (fst: composition after T_V exists; domino: compile plus the
precomputation of every tree), and the per-step mask time along the
conformance corpus's valid documents (p50/p90/p99), first pass (rows and
closures built on first use) and second pass (cached).

Run with ``pytest benchmarks/bench_pushdown.py --benchmark-only`` (needs
``../shared``); the figures are in plugins/fst/README.md.
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


@pytest.mark.parametrize("name", ["fst", "domino"])
@pytest.mark.parametrize("grammar", sorted(GRAMMARS))
def test_compile(benchmark, llama3, grammar, name):
    spec = ca.Grammar(GRAMMARS[grammar][0])
    backend = ca.get(name)
    backend.compile(spec, llama3)  # per-vocabulary set-up (T_V, trie lists) out of the timing
    out = []

    def run():
        out.append(backend.compile(spec, llama3))
        if name == "domino":
            out[-1].precompute()

    benchmark.pedantic(run, rounds=1 if name == "domino" else 3, iterations=1)
    benchmark.extra_info["states"] = out[-1].stats.states


@pytest.mark.parametrize("rerun", [False, True], ids=["first", "second"])
@pytest.mark.parametrize("name", ["fst", "domino"])
@pytest.mark.parametrize("grammar", sorted(GRAMMARS))
def test_mask_per_step(benchmark, llama3, grammar, name, rerun):
    text, docs = GRAMMARS[grammar]
    compiled = ca.get(name).compile(ca.Grammar(text), llama3)
    bitmask = ca.allocate_bitmask(1, llama3.size)
    times: list[float] = []

    def walk(record):
        for doc in docs:
            checker = compiled.checker()
            for token in llama3.encode(doc):
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
