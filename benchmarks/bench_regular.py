"""Regular constraints on the Llama-3 vocabulary, for Koo et al.'s five
workloads: compile time of ``fsm`` (outlines-core's index over 128k tokens)
and ``fst`` (composition with the detokenizing transducer, built once per
vocabulary), and the per-step mask of both with the naive backend on the same
states for comparison. A backend that refuses a workload is skipped, saying why. For
``fst`` also: the build of T_V (plain, and with the JSON string class as a
wildcard), and its two wide-class workloads with and without the wildcard
terminals (without them, one round: about 20 s and 4 million arcs).

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
from constrain_api.automata import CharSet

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
        ca.clear_caches()  # the core's caches (lowerings, regex automata): a first compile
        compiled.append(_compile(backend, spec, llama3))

    # fsm takes seconds a round; fst's milliseconds vary more on a shared VM
    benchmark.pedantic(run, rounds=3 if name == "fsm" else 15, iterations=1)
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


@pytest.mark.parametrize("wildcard", ["none", "json-string-class"])
def test_fst_detokenizer(benchmark, llama3, wildcard):
    """T_V over the whole vocabulary, built once per vocabulary and class set."""
    compiler = ca.get("fst").compiler(llama3)
    classes = []
    if wildcard != "none":
        # [^"\\\x00-\x1f]: the characters of a JSON string
        classes = [CharSet(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)))]
    compiler.wildcard_tables(classes)  # the per-class token tables, out of the timing
    benchmark.pedantic(
        compiler.detokenizer,
        args=(classes,),
        setup=lambda: compiler.clear_cache("detokenizers"),
        rounds=3,
        iterations=1,
    )


@pytest.mark.parametrize("wildcards", [True, False])
@pytest.mark.parametrize("workload", ["quoted-text", "json-object"])
def test_fst_wildcards(benchmark, llama3, workload, wildcards):
    """The difference the wildcard terminals make: compile time and arcs."""
    spec, _ = WORKLOADS[workload]
    backend = ca.get("fst", max_composed_arcs=10**9)
    backend.compile(spec, llama3)  # T_V (and T_V with wildcards) out of the timing
    compiled = []
    benchmark.pedantic(
        lambda: compiled.append(backend.compile(spec, llama3, wildcards=wildcards)),
        rounds=1 if not wildcards else 3,
        iterations=1,
    )
    benchmark.extra_info["arcs"] = compiled[-1].automaton.num_arcs()
    benchmark.extra_info["wildcard_classes"] = compiled[-1].stats.extra["wildcard_classes"]
