"""DOMINO (``domino``) on the Llama-3 vocabulary: the offline precomputation
of every scanner position's subterminal tree for a JSON and a C-subset
grammar (time and memory: the paper reports 1-5 s and 20 s), and the
per-step mask time distribution along valid documents (p50/p90/p99), cold
(trees and masks built on first use, as a fresh process decodes) and warm.

Run with ``pytest benchmarks/bench_domino.py --benchmark-only`` (needs
``../shared``); the figures are in plugins/domino/README.md.
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest
from constrain_conformance.corpus import C_SUBSET_GRAMMAR, JSON_GRAMMAR

import constrain_api as ca

GRAMMARS = {
    "json": (
        JSON_GRAMMAR,
        [
            '{"name": "Ada Lovelace", "born": 1815, "tags": ["math", "poetry"], "alive": false}',
            '[{"id": 1, "score": 0.5}, {"id": 2, "score": -3e2, "note": null}]',
        ],
    ),
    "c-subset": (
        C_SUBSET_GRAMMAR,
        [
            "int main() { int x = 0; while (x < 10) { x = x + 1; } return x; }",
            "int add(int a, int b) { return a + b; } void f() { add(1, 2); }",
        ],
    ),
}


@pytest.mark.parametrize("grammar", sorted(GRAMMARS))
def test_precompute(benchmark, llama3, grammar):
    spec = ca.Grammar(GRAMMARS[grammar][0])
    backend = ca.get("domino")
    backend.compile(spec, llama3)  # the vocabulary's trie lists, once per backend
    results = []

    def run():
        ca.clear_caches()  # the core's caches (lowerings, regex automata): a first compile
        compiled = backend.compile(spec, llama3)
        tracemalloc.start()
        results.append(compiled.precompute())
        results[-1]["peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 1e6, 1)
        tracemalloc.stop()

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(results[-1])


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
@pytest.mark.parametrize("grammar", sorted(GRAMMARS))
def test_mask_per_step(benchmark, llama3, grammar, warm):
    text, docs = GRAMMARS[grammar]
    compiled = ca.get("domino").compile(ca.Grammar(text), llama3)
    if warm:
        compiled.precompute()
    bitmask = ca.allocate_bitmask(1, llama3.size)
    times = []

    def run():
        for doc in docs:
            checker = compiled.checker()
            for token in llama3.encode(doc):
                start = time.perf_counter()
                checker.fill_mask(bitmask, 0)
                times.append(time.perf_counter() - start)
                checker.update([token])

    benchmark.pedantic(run, rounds=1, iterations=1)
    us = np.asarray(times) * 1e6
    for q in (50, 90, 99):
        benchmark.extra_info[f"p{q}_us"] = round(float(np.percentile(us, q)), 1)
    benchmark.extra_info["steps"] = len(times)
