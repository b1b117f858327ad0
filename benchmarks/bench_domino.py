"""DOMINO (``domino``) on the Llama-3 vocabulary: the offline precomputation
of every scanner position's subterminal tree for a JSON and a C-subset
grammar (time and memory: the paper reports 1-5 s and 20 s), and the
per-step mask time distribution along valid documents (p50/p90/p99), cold
(trees and masks built on first use, as a fresh process decodes) and warm;
and MaskBench's steps with trees on disk (``cache_dir``): in memory only,
stored as built (a first process), read back (a later one).

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


#: the MaskBench schemas (in the stage's order) of the trees-on-disk benchmark
DISK_SCHEMAS = 100


@pytest.fixture(scope="module")
def filled_tree_folder(llama3, tmp_path_factory):
    """A trees folder as a first process leaves it: the schemas walked once
    with ``cache_dir`` (not timed)."""
    from constrain_bench import maskbench

    folder = tmp_path_factory.mktemp("trees")
    backend = ca.get("domino", cache_dir=folder)
    for path in maskbench.schema_files(None, DISK_SCHEMAS):
        maskbench.run_schema(backend, "domino", llama3, path)
    backend.flush_trees()
    return folder


@pytest.mark.parametrize("disk", ["memory", "first", "later"])
def test_maskbench_steps_with_trees_on_disk(benchmark, llama3, tmp_path, disk, request):
    """MaskBench's steps on its first ``DISK_SCHEMAS`` schemas, first visits
    included, as the stage walks them: trees in memory only (``memory``),
    stored as they are built (``first``: a first process with a fresh
    ``cache_dir``), read back from what a first process stored (``later``:
    a compile of each schema anew, a copy of the folder ``filled_tree_folder``
    made). Extra info: TBM percentiles and max, schemas with no step over
    5 ms, TTFM p50, files in the folder after the run."""
    import shutil

    from constrain_bench import maskbench

    folder = None
    if disk == "first":
        folder = tmp_path / "trees"
    elif disk == "later":
        folder = tmp_path / "trees"
        shutil.copytree(request.getfixturevalue("filled_tree_folder"), folder)
    ca.clear_caches()  # (as a new process: no automaton of an earlier run kept)
    backend = ca.get("domino", cache_dir=folder)
    maskbench.start_up(backend, llama3)
    results = []

    def run():
        for path in maskbench.schema_files(None, DISK_SCHEMAS):
            results.append(maskbench.run_schema(backend, "domino", llama3, path))
        backend.flush_trees()

    benchmark.pedantic(run, rounds=1, iterations=1)
    passed = [r for r in results if r.status == "pass" and r.tbm_us]
    us = np.asarray([t for r in passed for t in r.tbm_us])
    for q in (50, 90, 99):
        benchmark.extra_info[f"tbm_p{q}_us"] = round(float(np.percentile(us, q)), 1)
    benchmark.extra_info["tbm_max_ms"] = round(float(us.max()) / 1e3, 2)
    ttfm = [r.ttfm_ms for r in passed]
    benchmark.extra_info["ttfm_p50_ms"] = round(float(np.percentile(ttfm, 50)), 2)
    benchmark.extra_info["schemas_max_5ms"] = (
        f"{sum(max(r.tbm_us) <= 5000 for r in passed)}/{len(passed)}"
    )
    benchmark.extra_info["files"] = len(list(folder.rglob("*.tree"))) if folder else 0
