"""End to end: the shared decoding loop, unconstrained and constrained, on the
embedded default model (``tiny_model``: a random-weight Llama sized to the
vocabulary, on CUDA when present, else CPU).

Each benchmark decodes the same prompts with the same sampler; ``extra_info``
holds tokens/s, the phase split (forward, mask, apply, sample, update), and
for constrained runs the ratio to the unconstrained tokens/s of the same
model: the overhead of the backend, the only thing that differs.
"""

from __future__ import annotations

import statistics

import pytest
import torch
from constrain_conformance.corpus import DATE_TIME, small_vocabulary

import constrain_api as ca
from constrain_api.decoding import generate, sample, tiny_model
from constrain_api.decoding.decoders import Sampling, apply_penalties_

#: A JSON object schema in the spirit of Koo et al.'s appendix C.4 workload.
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": "string", "format": "email"},
    },
    "required": ["name", "age"],
}

WORKLOADS = {
    "date-time": ca.Regex(DATE_TIME),
    "person-schema": ca.JsonSchema(PERSON),
}
BATCH, MAX_LEN, ROUNDS = 4, 48, 3


def _vocabularies():
    out = [pytest.param("bpe400", id="bpe400")]
    out.append(pytest.param("llama3", id="llama3", marks=pytest.mark.shared))
    return out


@pytest.fixture(scope="module", params=_vocabularies())
def setup(request):
    if request.param == "llama3":
        try:
            vocab = ca.Vocabulary.from_llama3(ca.shared.shared_file("vocab/llama3/tokenizer.model"))
        except FileNotFoundError as e:
            pytest.skip(str(e))
    else:
        vocab = small_vocabulary()
    model = tiny_model(vocab, seed=0)
    prompts = [[vocab.eos_id]] * BATCH
    baseline = []
    for seed in range(ROUNDS):
        result = generate(model, vocab, prompts, None, sample(1), max_len=MAX_LEN, seed=seed)
        baseline.append(result.tokens_per_second)
    return vocab, model, prompts, statistics.median(baseline)


def _record(benchmark, results, baseline=None):
    tps = statistics.median(r.tokens_per_second for r in results)
    benchmark.extra_info["tokens_per_s"] = round(tps, 1)
    totals = [r.totals() for r in results]
    for phase in ("forward", "mask", "apply", "sample", "update"):
        benchmark.extra_info[f"{phase}_s"] = round(statistics.median(t[phase] for t in totals), 5)
    benchmark.extra_info["forced"] = statistics.median(t["forced"] for t in totals)
    if baseline is not None:
        benchmark.extra_info["unconstrained_tokens_per_s"] = round(baseline, 1)
        benchmark.extra_info["ratio_to_unconstrained"] = round(tps / baseline, 3)


def _rounds(benchmark, model, vocab, prompts, constraint) -> list:
    """Decode ``ROUNDS`` times (seeds 0, 1, ...) under the benchmark's clock."""
    results = []

    def run():
        results.append(
            generate(
                model, vocab, prompts, constraint, sample(1), max_len=MAX_LEN, seed=len(results)
            )
        )

    benchmark.pedantic(run, rounds=ROUNDS, iterations=1)
    return results


def test_loop_unconstrained(benchmark, setup):
    vocab, model, prompts, _ = setup
    _record(benchmark, _rounds(benchmark, model, vocab, prompts, None))


def _constrained_cases():
    out = []
    for info in ca.available():
        for name, spec in WORKLOADS.items():
            if info.capabilities.supports(spec.kind):
                out.append(pytest.param(info.name, name, id=f"{info.name}-{name}"))
    return out


@pytest.mark.parametrize(("backend", "workload"), _constrained_cases())
def test_loop_constrained(benchmark, setup, backend, workload):
    vocab, model, prompts, baseline = setup
    try:
        compiled = ca.get(backend).compile(WORKLOADS[workload], vocab)
    except (ca.CompileLimitExceeded, ca.UnsupportedConstraint) as e:
        pytest.skip(f"{backend}: {e}")
    results = _rounds(benchmark, model, vocab, prompts, compiled)
    _record(benchmark, results, baseline)
    for result in results:  # a benchmark of wrong output measures nothing
        assert all(g.complete or g.truncated for g in result.sequences)


def test_penalties_16x128256_cpu(benchmark):
    """The loop's penalties on a batch of Llama-3-wide logits (repetition,
    frequency and presence at once; 300 seen tokens a row, half of them
    counted), the logits copy included as in ``bench_masks``."""
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(16, 128_256, generator=gen)
    seen = torch.zeros(16, 128_256, dtype=torch.bool)
    seen.scatter_(1, torch.randint(0, 128_256, (16, 300), generator=gen), True)
    counts = torch.where(seen & (torch.rand(16, 128_256, generator=gen) < 0.5), 1.0, 0.0)
    params = Sampling(repetition_penalty=1.1, frequency_penalty=0.5, presence_penalty=0.5)
    work = logits.clone()

    def run():
        work.copy_(logits)
        apply_penalties_(work, seen, counts, params)

    benchmark(run)
