"""FSM indexing on the Llama-3 vocabulary: compile time (outlines-core's index
over 128k tokens) and the per-step mask, for Koo et al.'s five workloads,
with the naive backend on the same states for comparison.

The per-step benchmark fills the masks of every state along a valid
document's natural tokenization; the first round builds fsm's cached rows,
later rounds are copies, as in decoding.
"""

from __future__ import annotations

import pytest
from constrain_conformance.corpus import (
    DATE_TIME,
    IPV4,
    MULTIPLE_CHOICE,
    PERSON_SCHEMA,
    QUOTED_TEXT,
)

import constrain_api as ca

WORKLOADS = {
    "multiple-choice": (ca.Regex(MULTIPLE_CHOICE), "The answer is (B)."),
    "iso-date-time": (ca.Regex(DATE_TIME), "2024-11-22T01:23:45Z"),
    "ipv4": (ca.Regex(IPV4), "192.168.0.1"),
    "quoted-text": (ca.Regex(QUOTED_TEXT), '"The quick brown fox jumps over the dog"'),
    "json-object": (
        ca.JsonSchema(PERSON_SCHEMA),
        '{"name":"Ada","age":36,"email":"ada@example.com","tags":["a","c"]}',
    ),
}


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_fsm_compile(benchmark, llama3, workload):
    spec, _ = WORKLOADS[workload]
    compiled = []

    def run():  # a fresh backend: no cached index
        compiled.append(ca.get("fsm").compile(spec, llama3))

    benchmark.pedantic(run, rounds=3, iterations=1)
    stats = compiled[-1].stats
    benchmark.extra_info["states"] = stats.states
    benchmark.extra_info["index_s"] = round(stats.extra["index_seconds"], 4)


@pytest.mark.parametrize("backend", ["fsm", "naive"])
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_mask_per_step(benchmark, llama3, workload, backend):
    spec, doc = WORKLOADS[workload]
    checker = ca.get(backend).compile(spec, llama3).checker()
    steps = [checker.fork()]
    for token in llama3.encode(doc):
        checker.update([token])
        steps.append(checker.fork())
    bitmask = ca.allocate_bitmask(1, llama3.size)

    def run():
        for c in steps:
            c.fill_mask(bitmask, 0)

    benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=1)
    benchmark.extra_info["steps"] = len(steps)
    benchmark.extra_info["per_step_us"] = round(benchmark.stats.stats.median / len(steps) * 1e6, 1)
