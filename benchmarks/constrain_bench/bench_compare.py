"""The side-by-side comparison: every selected backend on every workload and
vocabulary, measured the same way. ``python -m constrain_bench`` runs this file
(with ``--benchmark-save-data``, so per-call timings reach the report) and
writes docs/bench/REPORT.md; run alone it is an ordinary pytest-benchmark file.

Selection through the environment (the report's command sets it):
``CONSTRAIN_BENCH_VOCABS`` (default ``small,llama3``), ``CONSTRAIN_BENCH_BACKENDS``
(default: every installed one), ``CONSTRAIN_BENCH_QUICK=1`` (fewer workloads,
rounds and sizes), ``CONSTRAIN_BENCH_LOOP_ROUNDS`` (the end-to-end stage's
rounds), ``CONSTRAIN_BENCH_REFUSALS`` (a JSON file for what a backend
refused, so the report can say why a cell is empty).

- ``test_compile``: time to first mask (compile + first ``fill_mask``) on a
  fresh backend whose per-vocabulary set-up (fst's T_V, fsm's outlines-core
  vocabulary) is already built; that set-up's own time is ``extra_info``
  ``precompute_s``, the artifact's memory ``rss_delta_kib`` (native
  allocations included) and ``traced_kib`` (Python allocations).
- ``test_mask_step``: one round per ``fill_mask`` call, along the natural
  tokenization of the workload's document, in order, ``passes`` times: the
  saved data gives the per-step distribution and the cost against position.
- ``test_loop``: the shared decoding loop (argmax, batch 1 and 16) on the
  embedded model (``tiny_model``) or, with ``CONSTRAIN_BENCH_LOOP_MODEL``,
  random weights of a published model's shapes (``random_model``), on CUDA
  when present: each round runs the loop unconstrained and constrained on
  the same prompts, back to back, which first alternating from round to
  round (``LOOP_ROUNDS``, ``CONSTRAIN_BENCH_LOOP_ROUNDS``), so the ratio of
  their tokens/s is read pair by pair;
  ``extra_info`` has its median and spread, the phases per forward pass and
  the non-forward share (time per pass beside the forward ÷ forward).
- ``test_loop_speculative``: the same loop with speculative drafts (up to
  ``SPECULATIVE`` tokens, backends with the ``propose`` feature): each round
  the constrained loop without drafts and with them, on the same prompts,
  in alternating order, twice as many rounds as ``test_loop``, then more
  for ``SPECULATIVE_SECONDS`` (``CONSTRAIN_BENCH_SPECULATIVE_S``), longer
  while the speed-up is not resolved;
  ``extra_info`` has the speed-up (median of the rounds' ratios, its 95 %
  interval, their quartiles and range),
  the tokens drafted and accepted and the forward passes of both. The
  outputs must be the same token for token (argmax), or the test fails.
- ``test_scaling_vocab``: per-step mask time on random subsets of the
  Llama-3 vocabulary (all single bytes kept), 1k to 128k tokens.
- ``test_scaling_constraint``: compile time of a choice among n strings.
"""

from __future__ import annotations

import json
import math
import os
import random
import resource
import statistics
import time
import tracemalloc
from pathlib import Path

import pytest
from constrain_conformance import paths

import constrain_api as ca
from constrain_bench import workloads as wl

QUICK = wl.quick()
WORKLOADS = {w.name: w for w in wl.workloads(QUICK)}
VOCABS = wl.selected_vocabularies()
BACKENDS = wl.selected_backends()
COMPILE_ROUNDS = 1 if QUICK else 3
PASSES = 1 if QUICK else 3
#: Loop workloads (the loop costs seconds per round; a subset tells the story).
LOOP = ("koo-iso-date-time", "koo-json-object") if QUICK else (
    "koo-iso-date-time", "koo-json-object", "koo-quoted-text", "domino-json", "domino-gsm8k-json"
)  # fmt: skip
LOOP_BATCHES = (1, 4) if QUICK else (1, 16)
#: Rounds of the end-to-end stage: pairs of loops whose order alternates
#: (:func:`_alternating`); the speculative stage, whose ratios sit near 1,
#: runs twice as many.
LOOP_LEN, LOOP_ROUNDS = 48, wl.loop_rounds(1 if QUICK else 4)
SPECULATIVE_ROUNDS = 2 * LOOP_ROUNDS
#: ... and goes on two rounds at a time for the first of these seconds, then
#: for up to the second while the speed-up is not resolved to
#: ``SPECULATIVE_PRECISION`` (:func:`median_interval`): a few per cent, the
#: question there, is within a short loop's noise on a shared machine (the
#: median of 8 rounds' ratios moved 0.96-1.07 between runs at batch 1, that
#: of 64 rounds 0.98-1.01; in a noisy hour the middle half of the rounds'
#: ratios spans 0.83-1.05)
SPECULATIVE_SECONDS = wl.speculative_seconds((0.0, 0.0) if QUICK else (10.0, 30.0))
#: resolved: the 95 % interval of the median speed-up within ±2 % of it
SPECULATIVE_PRECISION = 0.02
LOOP_MODEL = wl.loop_model()
#: Speculative drafts (backends with the ``propose`` feature): up to this many
#: tokens a draft, on these workloads (where drafts hold, and where they miss)
SPECULATIVE = 4
SPECULATIVE_LOOP = ("koo-json-object",) if QUICK else (
    "koo-json-object", "domino-json", "domino-gsm8k-json"
)  # fmt: skip
#: A loop whose masks alone are projected to take longer is skipped, and the
#: report says why (XGrammar takes seconds per mask on the GSM8K schema).
LOOP_BUDGET_S = wl.loop_budget_s()
LOOP_PROBE_STEPS = 8
SCALING_SIZES = (1_000, 16_000, 128_256) if QUICK else (1_000, 4_000, 16_000, 64_000, 128_256)
SCALING_WORKLOADS = ("koo-json-object",) if QUICK else ("koo-json-object", "domino-json")
CHOICE_SIZES = (10, 100) if QUICK else (10, 100, 1_000)

_REFUSALS: list[dict] = []
_COMPILED: dict = {}
_VOCAB_NAMES: dict[str, str] = {}  # fingerprint -> the name the run was given


@pytest.fixture(scope="session", autouse=True)
def _write_refusals():
    yield
    target = os.environ.get("CONSTRAIN_BENCH_REFUSALS")
    if target:
        Path(target).write_text(json.dumps(_REFUSALS, indent=1))


@pytest.fixture(scope="session", params=VOCABS)
def vocab(request) -> ca.Vocabulary:
    try:
        loaded = wl.load_vocabulary(request.param)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    _VOCAB_NAMES[loaded.fingerprint] = request.param
    return loaded


def _refuse(test: str, backend: str, workload: str, vocab: ca.Vocabulary, error: Exception, **more):
    _REFUSALS.append(
        {
            "test": test,
            "backend": backend,
            "workload": workload,
            "vocab": _VOCAB_NAMES.get(vocab.fingerprint, vocab.name),
            "error": type(error).__name__,
            "reason": str(error),
            **more,
        }
    )
    pytest.skip(f"{backend} on {workload}: {type(error).__name__}: {error}")


class TooSlow(Exception):
    """A benchmark skipped because its projected time exceeds the budget."""


def _supported(backend: str, workload: ca.Workload) -> None:
    info = {i.name: i for i in ca.available()}.get(backend)
    if info is None:
        pytest.skip(f"{backend} is not installed")
    if not info.capabilities.supports(workload.constraint.kind):
        pytest.skip(f"{backend} does not support {workload.constraint.kind}")


def _probe(backend: ca.Backend, vocab: ca.Vocabulary) -> None:
    """Build a fresh backend's per-vocabulary set-up with a trivial constraint."""
    caps = backend.capabilities
    spec = ca.Regex("a") if caps.supports("regex") else ca.Choice(["a"])
    if caps.supports(spec.kind):
        backend.compile(spec, vocab).checker().fill_mask(ca.allocate_bitmask(1, vocab.size), 0)


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def _first_mask(backend: ca.Backend, spec: ca.Constraint, vocab: ca.Vocabulary) -> ca.Compiled:
    compiled = backend.compile(spec, vocab)
    compiled.checker().fill_mask(ca.allocate_bitmask(1, vocab.size), 0)
    return compiled


def _path(vocab: ca.Vocabulary, doc: str) -> list[int]:
    return paths.natural(vocab, doc) or paths.longest_match(vocab, doc) or []


@pytest.mark.parametrize("workload", list(WORKLOADS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_compile(benchmark, vocab, backend, workload):
    """Time to first mask on a fresh, vocabulary-warm backend."""
    w = WORKLOADS[workload]
    _supported(backend, w)
    precompute: list[float] = []

    def fresh():
        b = ca.get(backend)
        t0 = time.perf_counter()
        _probe(b, vocab)
        precompute.append(time.perf_counter() - t0)
        ca.clear_caches()  # the core's caches (lowerings, regex automata): a first compile
        return (b,), {}

    try:  # memory of the artifact, outside the timing
        (b,), _ = fresh()
        before = _rss_kib()
        if not QUICK:
            tracemalloc.start()
        compiled = _first_mask(b, w.constraint, vocab)
        if not QUICK:
            traced = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            benchmark.extra_info["traced_kib"] = traced // 1024
        benchmark.extra_info["rss_delta_kib"] = _rss_kib() - before
    except (ca.UnsupportedConstraint, ca.CompileLimitExceeded) as e:
        if tracemalloc.is_tracing():
            tracemalloc.stop()
        _refuse("compile", backend, workload, vocab, e)
    _COMPILED[(backend, workload, vocab.fingerprint)] = compiled
    benchmark.pedantic(
        lambda b: _first_mask(b, w.constraint, vocab),
        setup=fresh,
        rounds=COMPILE_ROUNDS,
        iterations=1,
    )
    benchmark.extra_info.update(
        precompute_s=min(precompute),
        states=compiled.stats.states,
        kind=w.constraint.kind,
        vocab=vocab.name,
        vocab_size=vocab.size,
    )


def _compiled(backend: str, workload: str, vocab: ca.Vocabulary) -> ca.Compiled:
    key = (backend, workload, vocab.fingerprint)
    if key not in _COMPILED:
        try:
            _COMPILED[key] = ca.get(backend).compile(WORKLOADS[workload].constraint, vocab)
        except (ca.UnsupportedConstraint, ca.CompileLimitExceeded) as e:
            pytest.skip(f"{backend} refused {workload}: {e}")
    return _COMPILED[key]


def _states(compiled: ca.Compiled, path: list[int], benchmark=None) -> list[ca.Checker]:
    """A checker at every position of ``path``, up to a token the backend
    rejects (an inexact one may): ``extra_info["rejected_at"]`` says where."""
    checker = compiled.checker()
    states = [checker.fork()]
    for step, token in enumerate(path):
        try:
            checker.update([token])
        except ca.TokenRejected:
            if benchmark is not None:
                benchmark.extra_info["rejected_at"] = step
            break
        states.append(checker.fork())
    return states


def _time_fill_mask(benchmark, states: list[ca.Checker], vocab: ca.Vocabulary) -> None:
    """One round per ``fill_mask`` call, the states in order, ``PASSES`` times."""
    bitmask = ca.allocate_bitmask(1, vocab.size)
    order = iter(states * PASSES)
    benchmark.pedantic(
        lambda c: c.fill_mask(bitmask, 0),
        setup=lambda: ((next(order),), {}),
        rounds=len(states) * PASSES,
        iterations=1,
    )


@pytest.mark.parametrize("workload", list(WORKLOADS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_mask_step(benchmark, vocab, backend, workload):
    """``fill_mask`` at every state along the document's tokens, in order."""
    w = WORKLOADS[workload]
    _supported(backend, w)
    compiled = _compiled(backend, workload, vocab)
    states = _states(compiled, _path(vocab, w.documents[0]), benchmark)
    _time_fill_mask(benchmark, states, vocab)
    benchmark.extra_info.update(
        steps=len(states), passes=PASSES, vocab=vocab.name, kind=w.constraint.kind
    )


@pytest.fixture(scope="module")
def loop_setup(vocab):
    pytest.importorskip("torch", reason="the decoding loop needs torch")
    import torch

    from constrain_api.decoding import argmax, generate

    model = wl.build_loop_model(vocab, LOOP_MODEL)
    if LOOP_MODEL == "tiny" and model.device.type == "cpu":
        # The model is tiny: one thread is fastest, and on a busy 2-core machine
        # two spinning threads made forward passes seven times slower.
        torch.set_num_threads(1)
    generate(model, vocab, wl.loop_prompts(vocab, 1), None, argmax(), max_len=4)  # warm-up
    if model.device.type == "cuda":
        # the apply kernel is compiled (Triton's JIT) at its first call: here,
        # not inside the first timed constrained loop (the model's logits are float32)
        logits = torch.zeros((max(LOOP_BATCHES), model.width), device=model.device)
        bitmask = ca.allocate_bitmask(len(logits), vocab.size)
        ca.apply_bitmask_(logits, bitmask, vocab_size=vocab.size)
        torch.cuda.synchronize()

    def run(constraint, batch: int, speculative: int = 0):
        prompts = wl.loop_prompts(vocab, batch)
        return generate(
            model, vocab, prompts, constraint, argmax(), max_len=LOOP_LEN, speculative=speculative
        )

    return model, run


def _seconds_per_mask(compiled: ca.Compiled, workload: ca.Workload, vocab: ca.Vocabulary) -> float:
    """The mean ``fill_mask`` time over the first ``LOOP_PROBE_STEPS`` states
    along the workload's document (first visits included)."""
    states = _states(compiled, _path(vocab, workload.documents[0])[:LOOP_PROBE_STEPS])
    bitmask = ca.allocate_bitmask(1, vocab.size)
    start = time.perf_counter()
    for checker in states:
        checker.fill_mask(bitmask, 0)
    return (time.perf_counter() - start) / len(states)


def median_interval(values, level: float = 0.95) -> tuple[float, float]:
    """A distribution-free ``level`` confidence interval of the median of
    ``values`` (order statistics, the binomial's normal approximation: the
    ranks n/2 ± z·√n/2); the whole range below six values."""
    ordered = sorted(values)
    n = len(ordered)
    z = statistics.NormalDist().inv_cdf((1 + level) / 2)
    k = max(0, math.floor(n / 2 - z * math.sqrt(n) / 2)) if n >= 6 else 0
    return ordered[k], ordered[n - 1 - k]


def _alternating(
    first, second, rounds: int, seconds: float = 0.0, resolved=None, most: float = 0.0
) -> list[tuple]:
    """Pairs ``(first(), second())``, each pair run back to back (drift
    between rounds falls on both), ``second`` run first in every other
    round: what a run leaves behind for the next (warm caches, the
    allocator's pools, a decoder's learned state) favours neither. At least
    ``rounds`` rounds, then two more at a time until ``seconds`` have passed,
    then, given ``resolved`` (pairs → bool), until it holds or ``most``
    seconds have passed."""
    pairs = []

    def one_round():
        if len(pairs) % 2:
            b = second()
            pairs.append((first(), b))
        else:
            a = first()
            pairs.append((a, second()))

    start = time.perf_counter()
    for _ in range(rounds):
        one_round()
    while time.perf_counter() - start < seconds:
        one_round()
        one_round()
    while resolved is not None and time.perf_counter() - start < most and not resolved(pairs):
        one_round()
        one_round()
    return pairs


def _per_pass(result) -> dict[str, float]:
    """Seconds per forward pass: each timed phase, ``other`` (the rest of the
    loop's wall time), ``share`` (everything beside the forward ÷ the
    forward) and ``overlapped`` (masks filled in the loop's worker thread
    while the pass ran: on no phase's path but the wait for them, ``mask``)."""
    from constrain_api.decoding.results import TIMED

    totals = result.totals()
    passes = max(totals["forward_passes"], 1)
    out = {phase: totals[phase] / passes for phase in TIMED}
    out["other"] = result.seconds / passes - sum(out.values())
    forward = out["forward"]
    out["share"] = (result.seconds / passes - forward) / forward if forward > 0 else float("nan")
    out["overlapped"] = totals["overlapped"] / passes
    return out


def _loop_info(benchmark, results, model, batch: int) -> None:
    totals = [r.totals() for r in results]
    phases = [_per_pass(r) for r in results]
    benchmark.extra_info.update(
        tokens_per_s=statistics.median(r.tokens_per_second for r in results),
        tokens=sum(r.tokens for r in results),
        device=str(model.device),
        model=LOOP_MODEL,
        batch=batch,
        passes=statistics.median(t["forward_passes"] for t in totals),
        per_pass_s={
            p: statistics.median(ph[p] for ph in phases) for p in phases[0] if p != "share"
        },
        share=statistics.median(ph["share"] for ph in phases),
        rounds=len(results),
    )


@pytest.mark.parametrize("batch", LOOP_BATCHES)
def test_loop_unconstrained(benchmark, vocab, loop_setup, batch):
    model, run = loop_setup
    results = benchmark.pedantic(
        lambda: [run(None, batch) for _ in range(LOOP_ROUNDS)], rounds=1, iterations=1
    )
    _loop_info(benchmark, results, model, batch)
    benchmark.extra_info["vocab"] = vocab.name


def _duration(seconds: float) -> str:
    """A duration as a reader wants it: in s, ms or µs, two significant
    digits below 10 of the unit, whole units above (``590 s``, ``45 µs``;
    never ``5.9e+02 s``)."""
    unit, scale = next(
        ((u, k) for u, k in (("s", 1.0), ("ms", 1e-3)) if seconds >= k), ("µs", 1e-6)
    )
    value = seconds / scale
    return f"{value:.2g} {unit}" if value < 10 else f"{value:,.0f} {unit}"


def _within_budget(test, compiled, backend, workload, vocab, batch: int, loops: int) -> None:
    """Skip (a refusal the report shows) when ``loops`` constrained loops of
    this workload's masks alone are projected past ``LOOP_BUDGET_S``."""
    per_mask = _seconds_per_mask(compiled, WORKLOADS[workload], vocab)
    projected = loops * per_mask * batch * LOOP_LEN
    if projected > LOOP_BUDGET_S:
        reason = (
            f"{_duration(per_mask)} per mask, projected {_duration(projected)}"
            f" > {LOOP_BUDGET_S:g} s"
        )
        _refuse(test, backend, workload, vocab, TooSlow(reason), batch=batch)


@pytest.mark.parametrize("batch", LOOP_BATCHES)
@pytest.mark.parametrize("workload", [w for w in LOOP if w in WORKLOADS])
@pytest.mark.parametrize("backend", BACKENDS)
def test_loop(benchmark, vocab, loop_setup, backend, workload, batch):
    _supported(backend, WORKLOADS[workload])
    model, run = loop_setup
    compiled = _compiled(backend, workload, vocab)
    _within_budget("loop", compiled, backend, workload, vocab, batch, loops=LOOP_ROUNDS)

    def pairs():
        return _alternating(lambda: run(None, batch), lambda: run(compiled, batch), LOOP_ROUNDS)

    rounds = benchmark.pedantic(pairs, rounds=1, iterations=1)
    results = [constrained for _free, constrained in rounds]
    for result in results:  # a benchmark of wrong output measures nothing
        assert all(g.complete or g.truncated for g in result.sequences)
    _loop_info(benchmark, results, model, batch)
    ratios = [c.tokens_per_second / u.tokens_per_second for u, c in rounds]
    free = [_per_pass(u) for u, _c in rounds]  # the paired unconstrained runs, phase by phase
    benchmark.extra_info.update(
        vocab=vocab.name,
        unconstrained_tokens_per_s=statistics.median(u.tokens_per_second for u, _c in rounds),
        ratio=statistics.median(ratios),
        ratio_min=min(ratios),
        ratio_max=max(ratios),
        unconstrained_share=statistics.median(ph["share"] for ph in free),
        unconstrained_per_pass_s={
            p: statistics.median(ph[p] for ph in free) for p in free[0] if p != "share"
        },
    )


@pytest.mark.parametrize("batch", LOOP_BATCHES)
@pytest.mark.parametrize("workload", [w for w in SPECULATIVE_LOOP if w in WORKLOADS])
@pytest.mark.parametrize("backend", BACKENDS)
def test_loop_speculative(benchmark, vocab, loop_setup, backend, workload, batch):
    _supported(backend, WORKLOADS[workload])
    if ca.FEATURE_PROPOSE not in ca.get(backend).capabilities.features:
        pytest.skip(f"{backend} drafts no tokens (no {ca.FEATURE_PROPOSE!r} feature)")
    model, run = loop_setup
    compiled = _compiled(backend, workload, vocab)
    _within_budget(
        "loop_speculative", compiled, backend, workload, vocab, batch, loops=2 * SPECULATIVE_ROUNDS
    )

    def speedups(pairs):
        return [d.tokens_per_second / p.tokens_per_second for p, d in pairs]

    def resolved(pairs):
        ratios = speedups(pairs)
        low, high = median_interval(ratios)
        return high - low <= 2 * SPECULATIVE_PRECISION * statistics.median(ratios)

    def pairs():
        least, most = SPECULATIVE_SECONDS
        return _alternating(
            lambda: run(compiled, batch),
            lambda: run(compiled, batch, SPECULATIVE),
            SPECULATIVE_ROUNDS,
            least,
            resolved,
            most,
        )

    rounds = benchmark.pedantic(pairs, rounds=1, iterations=1)
    for plain, drafted in rounds:  # drafts verified under argmax change nothing
        assert [g.token_ids for g in drafted.sequences] == [g.token_ids for g in plain.sequences]
    results = [drafted for _plain, drafted in rounds]
    _loop_info(benchmark, results, model, batch)
    ratios = speedups(rounds)
    plain_totals = [p.totals() for p, _d in rounds]
    totals = [d.totals() for _p, d in rounds]
    benchmark.extra_info.update(
        vocab=vocab.name,
        speculative=SPECULATIVE,
        plain_tokens_per_s=statistics.median(p.tokens_per_second for p, _d in rounds),
        speedup=statistics.median(ratios),
        speedup_min=min(ratios),
        speedup_max=max(ratios),
        # the middle half of the rounds (min and max: outliers, over many rounds)
        speedup_quartiles=statistics.quantiles(ratios, n=4, method="inclusive")[::2],
        # how well the median is known: its 95 % interval, and the precision asked of it
        speedup_interval=median_interval(ratios),
        speedup_precision=SPECULATIVE_PRECISION,
        drafted=statistics.median(t["drafted"] for t in totals),
        accepted=statistics.median(t["accepted"] for t in totals),
        plain_passes=statistics.median(t["forward_passes"] for t in plain_totals),
    )


def _scaling_vocab(size: int) -> ca.Vocabulary:
    full = wl.load_vocabulary("llama3")
    normal = full.normal_ids().tolist()
    if size >= len(normal):
        return full
    singles = [i for i in normal if len(full.token_bytes(i)) == 1]
    rest = sorted(set(normal) - set(singles))
    return full.subset(singles + random.Random(size).sample(rest, size - len(singles)))


@pytest.mark.parametrize("workload", SCALING_WORKLOADS)
@pytest.mark.parametrize("size", SCALING_SIZES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_scaling_vocab(benchmark, backend, size, workload):
    """Per-step mask time against vocabulary size (Willard & Louf's figure)."""
    w = WORKLOADS.get(workload) or next(s for s in wl.SEEDS if s.name == workload)
    _supported(backend, w)
    try:
        vocab = _scaling_vocab(size)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    try:
        compiled = ca.get(backend).compile(w.constraint, vocab)
    except (ca.UnsupportedConstraint, ca.CompileLimitExceeded) as e:
        _refuse("scaling_vocab", backend, workload, vocab, e)
    states = _states(compiled, paths.longest_match(vocab, w.documents[0]) or [], benchmark)
    bitmask = ca.allocate_bitmask(1, vocab.size)
    for c in states:  # first visits (row caches) out of the steady-state figure
        c.fill_mask(bitmask, 0)
    _time_fill_mask(benchmark, states, vocab)
    benchmark.extra_info.update(vocab_size=vocab.size, workload=workload)


def _words(n: int) -> list[str]:
    rng = random.Random(n)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return sorted({"".join(rng.choices(letters, k=rng.randint(3, 12))) for _ in range(n)})


@pytest.mark.parametrize("n", CHOICE_SIZES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_scaling_constraint(benchmark, vocab, backend, n):
    """Time to first mask of a choice among ``n`` strings (constraint size)."""
    spec = ca.Choice(_words(n))
    _supported(backend, ca.Workload(f"choice-{n}", spec))
    b = ca.get(backend)
    _probe(b, vocab)
    try:
        _first_mask(b, spec, vocab)
    except (ca.UnsupportedConstraint, ca.CompileLimitExceeded) as e:
        _refuse("scaling_constraint", backend, f"choice-{n}", vocab, e)

    def fresh():
        b = ca.get(backend)
        _probe(b, vocab)
        return (b,), {}

    benchmark.pedantic(
        lambda b: _first_mask(b, spec, vocab), setup=fresh, rounds=COMPILE_ROUNDS, iterations=1
    )
    benchmark.extra_info.update(n=n, vocab=vocab.name, pattern_bytes=sum(map(len, spec.options)))
