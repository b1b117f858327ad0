"""Regular constraints on the Llama-3 vocabulary, for Koo et al.'s five
workloads: compile time of ``fsm`` (outlines-core's index over 128k tokens)
and ``fst`` (composition with the detokenizing transducer, built once per
vocabulary), and the per-step mask of both with the naive backend on the same
states for comparison. A backend that refuses a workload (``fst`` past its
composition limit) is skipped, saying why.

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


def _compile(backend, spec, vocab):
    try:
        return backend.compile(spec, vocab)
    except (ca.CompileLimitExceeded, ca.UnsupportedConstraint) as e:
        pytest.skip(f"{backend.name}: {e}")


@pytest.mark.parametrize("name", ["fsm", "fst"])
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_compile(benchmark, llama3, workload, name):
    spec, _ = WORKLOADS[workload]
    warm = ca.get(name)
    _compile(warm, spec, llama3)  # per-vocabulary set-up (fst's T_V) out of the timing
    compiled = []

    def run():  # fsm: a fresh backend, no cached index; fst: the cached T_V
        backend = ca.get(name) if name == "fsm" else warm
        compiled.append(_compile(backend, spec, llama3))

    benchmark.pedantic(run, rounds=3, iterations=1)
    benchmark.extra_info["states"] = compiled[-1].stats.states


@pytest.mark.parametrize("backend", ["fsm", "fst", "naive"])
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_mask_per_step(benchmark, llama3, workload, backend):
    spec, doc = WORKLOADS[workload]
    checker = _compile(ca.get(backend), spec, llama3).checker()
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
