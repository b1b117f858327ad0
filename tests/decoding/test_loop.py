"""The shared decoding loop: outputs in the language for every decoder, honest
finish reasons, reproducibility, minimal invasiveness, and that the fast paths
(forced tokens, opportunistic masking, speculative drafts) change nothing but
the work done.

Outputs are judged by independent checkers (Python ``re``, ``jsonschema``,
``lark``), never by the backend that constrained them.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time

import jsonschema
import lark
import numpy as np
import pytest
import torch
from constrain_conformance.corpus import CASES, small_vocabulary

import constrain_api as ca
from constrain_api.decoding import (
    ConstrainedLogitsProcessor,
    ScriptedLM,
    argmax,
    beam,
    beam_sample,
    generate,
    sample,
    tiny_model,
)
from constrain_api.decoding.batch import Row
from constrain_api.decoding.decoders import Sampling, apply_penalties_, filter_
from constrain_api.decoding.drafts import DraftCost, Drafts, acceptance, expected_advance

DECODERS = [argmax(), sample(3, 1.0), beam(3), beam_sample(3, 1.0)]

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"enum": ["ada", "bob"]},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "ok": {"type": "boolean"},
    },
    "required": ["name", "age", "ok"],
    "additionalProperties": False,
}

PAIRS_GRAMMAR = r"""
start: pair ("," pair)~0..2
pair: KEY "=" VALUE
KEY: /[a-c]/
VALUE: /[0-9]{1,2}/
"""

REGEX = r"(yes|no|maybe) [0-9]{1,3}!"


def _in_language(kind: str, data: bytes) -> bool:
    """Independent judges: Python ``re``, ``jsonschema``, ``lark``."""
    if kind == "regex":
        return re.fullmatch(REGEX.encode(), data) is not None
    if kind == "json_schema":
        try:
            jsonschema.validate(json.loads(data), SCHEMA)
        except (ValueError, jsonschema.ValidationError):
            return False
        return True
    try:
        lark.Lark(PAIRS_GRAMMAR).parse(data.decode())
    except (lark.exceptions.LarkError, UnicodeDecodeError):
        return False
    return True


SPECS = {
    "regex": ca.Regex(REGEX),
    "json_schema": ca.JsonSchema(SCHEMA),
    "grammar": ca.Grammar(PAIRS_GRAMMAR),
}


@pytest.fixture(scope="module")
def vocab() -> ca.Vocabulary:
    return small_vocabulary()


@pytest.fixture(scope="module")
def model(vocab):
    # CPU by default, so results do not depend on the machine; set
    # CONSTRAIN_TEST_DEVICE=cuda to run the same tests on a GPU.
    return tiny_model(vocab, seed=0, device=os.environ.get("CONSTRAIN_TEST_DEVICE", "cpu"))


@pytest.fixture(scope="module")
def compiled(vocab):
    naive = ca.get("naive")
    return {kind: naive.compile(spec, vocab) for kind, spec in SPECS.items()}


class Bigram:
    """The smallest ``CausalLM``: logits depend on the last attended token only."""

    def __init__(self, width: int, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.table = torch.randn(width, width, generator=g) * 3
        self.width = width
        self.device = torch.device("cpu")

    def forward(self, ids, attention_mask, position_ids, cache):
        rows, steps = ids.shape
        first = attention_mask.shape[1] - steps
        last = list(cache) if cache is not None else [0] * rows
        out = torch.empty(rows, steps, self.width)
        for b in range(rows):
            for t in range(steps):
                if attention_mask[b, first + t]:
                    last[b] = int(ids[b, t])
                out[b, t] = self.table[last[b]]
        return out, last

    def select_rows(self, cache, rows):
        return [cache[int(r)] for r in rows]


# -- every decoder stays in the language -------------------------------------------------
@pytest.mark.parametrize("kind", sorted(SPECS))
@pytest.mark.parametrize("decoder", DECODERS, ids=lambda d: d.kind)
def test_every_decoder_stays_in_the_language(vocab, model, compiled, kind, decoder):
    prompts = [[vocab.eos_id], vocab.encode("The answer:")]
    result = generate(model, vocab, prompts, compiled[kind], decoder, max_len=48, seed=3)
    assert len(result.outputs) == 2
    for group in result.outputs:
        assert 1 <= len(group) <= decoder.n
        for g in group:
            assert g.finish_reason in ("eos", "finished", "max_len"), g
            # What the result claims is true, both ways (a truncated text may
            # happen to be in the language; "8.000..." runs forever as an integer).
            assert g.complete == _in_language(kind, g.data), g
            assert g.complete or g.finish_reason == "max_len"
            assert g.data == vocab.decode(g.token_ids)
            assert not any(t in vocab.special_ids or t >= vocab.size for t in g.token_ids)
    assert any(g.complete for g in result.sequences)


@pytest.mark.parametrize("decoder", [beam(4), beam_sample(4, 1.5)], ids=lambda d: d.kind)
def test_beams_are_sorted_by_score_and_distinct(vocab, model, compiled, decoder):
    result = generate(model, vocab, [[vocab.eos_id]], compiled["regex"], decoder, seed=1)
    (group,) = result.outputs
    scores = [g.score for g in group]
    assert scores == sorted(scores, reverse=True)
    assert len({tuple(g.token_ids) for g in group}) == len(group)
    assert all(s <= 0 for s in scores)


def test_beam_finds_a_better_sequence_than_greedy_or_ties(vocab, model, compiled):
    prompts = [[vocab.eos_id]]
    greedy = generate(model, vocab, prompts, compiled["json_schema"], argmax()).outputs[0][0]
    best = generate(model, vocab, prompts, compiled["json_schema"], beam(4)).outputs[0][0]
    assert best.score >= greedy.score - 1e-4


# -- reproducibility -------------------------------------------------------------------
def test_same_seed_same_output_and_seeds_matter(vocab, model, compiled):
    def run(seed):
        r = generate(model, vocab, [[vocab.eos_id]], compiled["grammar"], sample(6, 2.0), seed=seed)
        return [g.token_ids for g in r.sequences]

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_beam_sample_draws_while_beam_does_not(vocab, model, compiled):
    def run(decoder, seed):
        r = generate(model, vocab, [[vocab.eos_id]], compiled["grammar"], decoder, seed=seed)
        return tuple(tuple(g.token_ids) for g in r.sequences)

    assert len({run(beam(3), seed) for seed in range(4)}) == 1
    assert len({run(beam_sample(3, 3.0), seed) for seed in range(4)}) > 1


# -- finish reasons --------------------------------------------------------------------
def test_max_len_truncation_is_reported(vocab, model):
    compiled = ca.get("naive").compile(ca.Regex("[a-z]{60}"), vocab)
    (g,) = generate(model, vocab, [[vocab.eos_id]], compiled, max_len=5).sequences
    assert g.finish_reason == "max_len" and g.truncated
    assert len(g.token_ids) == 5
    assert g.complete is False


@pytest.mark.parametrize("decoder", [beam(3), beam_sample(3, 1.0)], ids=lambda d: d.kind)
@pytest.mark.parametrize("max_len", [1, 4])
def test_beam_search_stops_its_hypotheses_at_max_len(vocab, model, decoder, max_len):
    """Every hypothesis of a beam search is cut at ``max_len`` tokens, and
    says so (the mutation check found a ``>`` for ``>=`` there unseen)."""
    compiled = ca.get("naive").compile(ca.Regex("[a-z]{60}"), vocab)
    result = generate(model, vocab, [[vocab.eos_id]], compiled, decoder, max_len=max_len, seed=0)
    assert result.sequences
    for g in result.sequences:
        assert len(g.token_ids) == max_len and g.finish_reason == "max_len" and g.truncated


@pytest.mark.parametrize("decoder", [argmax(), sample(1, 1.0)], ids=["argmax", "sample"])
@pytest.mark.parametrize("max_len", [1, 3, 5])
def test_max_len_truncates_a_forced_chain(vocab, model, decoder, max_len):
    """A constraint that forces most tokens: the chain stops at ``max_len``."""
    text = "forced-and-forced-again"
    compiled = ca.get("naive").compile(ca.Choice([text]), vocab)
    result = generate(model, vocab, [[vocab.eos_id]], compiled, decoder, max_len=max_len, seed=0)
    (g,) = result.sequences
    assert g.finish_reason == "max_len" and len(g.token_ids) == max_len
    assert result.totals()["forced"] == g.forced
    assert g.forced > 0 or max_len == 1  # the chain is what reached max_len
    assert text.encode().startswith(g.data)


def test_truncated_but_accepted_text_says_so(vocab):
    target = vocab.encode("abcdefgh")
    lm = ScriptedLM(target, width=vocab.size, eos_id=vocab.eos_id)
    compiled = ca.get("naive").compile(ca.Regex("[a-z]+"), vocab)
    (g,) = generate(lm, vocab, [[vocab.eos_id]], compiled, max_len=2).sequences
    assert g.finish_reason == "max_len"
    assert g.complete is True  # "ab"-ish prefix is itself in [a-z]+
    assert g.token_ids == target[:2]


def test_finished_constraint_stops_without_eos(vocab, model):
    compiled = ca.get("naive").compile(ca.Choice(["alpha", "beta"]), vocab)
    for g in generate(model, vocab, [[vocab.eos_id]], compiled, sample(4), seed=0).sequences:
        assert g.data in (b"alpha", b"beta")
        assert g.finish_reason in ("finished", "eos")
        assert vocab.eos_id not in g.token_ids


def test_unconstrained_never_picks_padded_logits(vocab, model):
    assert model.width > vocab.size
    result = generate(model, vocab, [[vocab.eos_id]] * 2, None, sample(2, 3.0), max_len=30, seed=0)
    for g in result.sequences:
        assert g.complete is None
        assert all(t < vocab.size for t in g.token_ids)
    assert result.totals()["interventions"] == 0


# -- batching ---------------------------------------------------------------------------
def test_lockstep_batch_equals_each_prompt_alone(vocab, model, compiled):
    prompts = [vocab.encode("x"), vocab.encode('{"key": "value", "list"'), [vocab.eos_id]]
    together = generate(model, vocab, prompts, compiled["json_schema"], argmax())
    for i, prompt in enumerate(prompts):
        alone = generate(model, vocab, [prompt], compiled["json_schema"], argmax())
        assert together.outputs[i][0].token_ids == alone.outputs[0][0].token_ids


# -- minimal invasiveness -------------------------------------------------------------------
MINIMAL_CASES = [(case, doc) for case in CASES for doc in case.valid]
SCHEMA_DOCS = ['{"name":"ada","age":36,"ok":true}', '{"name":"bob","age":120,"ok":false}']


@pytest.mark.parametrize(
    ("spec", "doc"),
    [(c.spec, d) for c, d in MINIMAL_CASES] + [(SPECS["json_schema"], d) for d in SCHEMA_DOCS],
    ids=[f"{c.name}-{i}" for i, (c, _) in enumerate(MINIMAL_CASES)]
    + [f"schema-{i}" for i in range(len(SCHEMA_DOCS))],
)
def test_naive_reproduces_natural_tokenization(vocab, spec, doc):
    target = vocab.encode(doc)
    compiled = ca.get("naive").compile(spec, vocab)
    lm = ScriptedLM(target, width=vocab.size, eos_id=vocab.eos_id)
    result = generate(lm, vocab, [[vocab.eos_id]], compiled, argmax(), max_len=len(target) + 2)
    (g,) = result.sequences
    assert g.token_ids == target
    assert g.interventions == 0
    assert result.totals()["interventions"] == 0
    assert g.complete


def test_an_invalid_target_is_intervened_on(vocab):
    target = vocab.encode("maybe 12345!")  # four digits: outside the language
    compiled = ca.get("naive").compile(ca.Regex(REGEX), vocab)
    lm = ScriptedLM(target, width=vocab.size, eos_id=vocab.eos_id)
    (g,) = generate(lm, vocab, [[vocab.eos_id]], compiled, max_len=20).sequences
    assert g.interventions >= 1
    assert _in_language("regex", g.data)


# -- fast paths change nothing but the work ---------------------------------------------------
def _tokens(result):
    return [g.token_ids for g in result.sequences]


def test_forced_tokens_skip_forward_passes(vocab, model):
    compiled = ca.get("naive").compile(ca.Regex(r'\{"name": "(ada|bob)", "tags": \[\]\}'), vocab)
    fast = generate(model, vocab, [[vocab.eos_id]], compiled, forced=True)
    slow = generate(model, vocab, [[vocab.eos_id]], compiled, forced=False)
    assert _tokens(fast) == _tokens(slow)
    assert fast.totals()["forced"] > 0 and slow.totals()["forced"] == 0
    assert fast.totals()["forward_passes"] < slow.totals()["forward_passes"]
    assert fast.sequences[0].score == pytest.approx(slow.sequences[0].score, abs=1e-4)


@pytest.mark.parametrize("decoder", [argmax(), sample(3, 1.0)], ids=lambda d: d.kind)
def test_opportunistic_masking_gives_the_same_output(vocab, model, compiled, decoder):
    for spec in compiled.values():
        full = generate(model, vocab, [[vocab.eos_id]], spec, decoder, seed=5, forced=False)
        lazy = generate(model, vocab, [[vocab.eos_id]], spec, decoder, seed=5, opportunistic=True)
        assert _tokens(lazy) == _tokens(full)


def test_opportunistic_builds_no_mask_for_a_willing_model(vocab):
    target = vocab.encode("maybe 42!")
    compiled = ca.get("naive").compile(ca.Regex(REGEX), vocab)

    class CountingCompiled:
        """Delegates to the naive artifact and counts mask fills."""

        def __init__(self):
            self.vocab, self.spec, self.stats, self.fills = vocab, compiled.spec, None, 0

        def checker(self):
            inner = compiled.checker()
            outer = self

            class Counting(type(inner)):
                def fill_mask(self, bitmask, row=0):
                    outer.fills += 1
                    super().fill_mask(bitmask, row)

            inner.__class__ = Counting
            return inner

        def fill_masks(self, checkers, bitmask):
            for i, c in enumerate(checkers):
                c.fill_mask(bitmask, i)

    counting = CountingCompiled()
    lm = ScriptedLM(target, width=vocab.size, eos_id=vocab.eos_id)
    (g,) = generate(lm, vocab, [[vocab.eos_id]], counting, opportunistic=True).sequences
    assert g.token_ids == target
    assert counting.fills == 0
    (g,) = generate(lm, vocab, [[vocab.eos_id]], counting).sequences
    assert counting.fills > 0


# -- masks filled beside the forward pass -------------------------------------------------------
class ThreadLogged:
    """A ``Compiled`` that delegates to ``inner`` and notes the thread of each
    ``fill_masks`` call (optionally raising at the ``fail_at``-th)."""

    def __init__(self, inner, fail_at=None):
        self.inner, self.threads, self.fail_at, self.done = inner, [], fail_at, 0
        self.spec, self.vocab, self.stats = inner.spec, inner.vocab, inner.stats

    def checker(self):
        return self.inner.checker()

    def fill_masks(self, checkers, bitmask):
        self.threads.append(threading.get_ident())
        if len(self.threads) == self.fail_at:
            raise ca.CompileLimitExceeded("lexer_states", 10, detail="a bound hit while filling")
        time.sleep(0.01)  # (still filling when a pass beside it fails)
        self.inner.fill_masks(checkers, bitmask)
        self.done += 1


def _mask_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("constrain-masks")]


@pytest.mark.parametrize("decoder", [argmax(), sample(3, 1.0)], ids=lambda d: d.kind)
@pytest.mark.parametrize("kind", sorted(SPECS))
def test_masks_filled_beside_the_forward_pass_give_the_same_output(
    vocab, model, compiled, kind, decoder
):
    """``fill_beside_forward=True`` fills every mask on the worker thread
    (and records its time as ``overlapped``), ``False`` and the default on a CPU
    on the calling thread; tokens, scores, interventions and forced tokens
    are the same."""
    prompts = [[vocab.eos_id], vocab.encode("The answer:"), [vocab.eos_id, 12]]
    runs = {}
    for option in (True, False, None):
        logged = ThreadLogged(compiled[kind])
        result = generate(
            model, vocab, prompts, logged, decoder, max_len=32, seed=4, fill_beside_forward=option
        )
        on_worker = [t != threading.get_ident() for t in logged.threads]
        assert (
            logged.threads
            and all(on_worker) == (option is True)
            and any(on_worker) == (option is True)
        )
        assert (result.totals()["overlapped"] > 0) == (option is True)
        runs[option] = [
            (g.token_ids, g.finish_reason, g.interventions, g.forced, g.score)
            for g in result.sequences
        ]
    assert runs[True] == runs[False] == runs[None]
    assert not _mask_threads()  # the worker ends with the call
    # checkers given one per prompt (no Compiled) are filled beside the pass when asked
    checkers = [compiled[kind].checker() for _ in prompts]
    given = [
        generate(
            model, vocab, prompts, checkers, decoder, max_len=32, seed=4, fill_beside_forward=o
        )
        for o in (True, None)
    ]
    assert given[0].totals()["overlapped"] > 0 == given[1].totals()["overlapped"]
    assert _tokens(given[0]) == _tokens(given[1]) == [r[0] for r in runs[True]]


def test_fill_beside_forward_is_chosen_where_it_pays(vocab, compiled):
    """By default: a CUDA model and a constraint that fills outside the GIL;
    never for beams, drafts or opportunistic masking, whatever is asked."""
    from constrain_api.decoding.loop import fills_beside

    class Outside:
        fills_outside_gil = True

    class LoopSettings:
        def __init__(self, beam=False, speculative=0, opportunistic=False):
            self.decoder = beam_sample(2) if beam else argmax()
            self.speculative, self.opportunistic = speculative, opportunistic

    cuda, cpu, plain = torch.device("cuda"), torch.device("cpu"), LoopSettings()
    assert fills_beside(None, cuda, Outside(), plain)
    assert not fills_beside(None, cpu, Outside(), plain)
    assert not fills_beside(None, cuda, compiled["regex"], plain)  # (naive: Python, in the GIL)
    assert fills_beside(True, cpu, compiled["regex"], plain)
    assert not fills_beside(False, cuda, Outside(), plain)
    assert not fills_beside(None, cuda, None, plain)  # (checkers without a Compiled)
    assert fills_beside(True, cpu, None, plain)
    for settings in (
        LoopSettings(beam=True),
        LoopSettings(speculative=2),
        LoopSettings(opportunistic=True),
    ):
        assert not fills_beside(True, cuda, Outside(), settings)


def test_errors_beside_the_forward_pass_reach_the_caller(vocab, model, compiled):
    """What the worker raises is raised by ``generate``; a forward pass that
    raises waits for the masks being filled beside it; either way no worker
    thread is left."""
    failing = ThreadLogged(compiled["regex"], fail_at=3)
    with pytest.raises(ca.CompileLimitExceeded, match="a bound hit while filling"):
        generate(model, vocab, [[vocab.eos_id]] * 2, failing, max_len=16, fill_beside_forward=True)
    assert len(failing.threads) == 3 and not _mask_threads()

    class Failing:
        width, device = model.width, model.device

        def __init__(self):
            self.passes = 0

        def forward(self, *args, **options):
            self.passes += 1
            if self.passes == 3:
                raise RuntimeError("the device went away")
            return model.forward(*args, **options)

        def select_rows(self, cache, rows):
            return model.select_rows(cache, rows)

    logged = ThreadLogged(compiled["regex"])
    with pytest.raises(RuntimeError, match="the device went away"):
        generate(
            Failing(), vocab, [[vocab.eos_id]] * 2, logged, max_len=16, fill_beside_forward=True
        )
    assert len(logged.threads) == logged.done == 3 and not _mask_threads()
    with pytest.raises(ValueError, match="fill_beside_forward"):
        generate(model, vocab, [[vocab.eos_id]], compiled["regex"], fill_beside_forward="yes")
    for options in ({"decoder": beam(2)}, {"speculative": 2}, {"opportunistic": True}):
        with pytest.raises(ValueError, match="fill_beside_forward needs argmax or sample"):
            generate(
                model,
                vocab,
                [[vocab.eos_id]],
                compiled["regex"],
                fill_beside_forward=True,
                **options,
            )
    # (False with them is what they do anyway)
    generate(model, vocab, [[vocab.eos_id]], compiled["regex"], beam(2), fill_beside_forward=False)


def test_every_step_records_its_forward_pass_and_the_phases_fit_the_wall_time(
    vocab, model, compiled
):
    """The forward is timed after the step (on a GPU from CUDA events, as the
    pass runs while the masks are filled): each step has its time, and the
    phases together never exceed the call's wall time."""
    from constrain_api.decoding.results import TIMED

    result = generate(model, vocab, [[vocab.eos_id]] * 2, compiled["regex"], argmax())
    assert result.steps and all(step.forward > 0 for step in result.steps)
    totals = result.totals()
    assert 0 < sum(totals[phase] for phase in TIMED) <= result.seconds


class Logged:
    """A checker (or, without ``inner``'s checker methods, a model) that
    appends its updates, mask fills and forward passes to a shared log."""

    def __init__(self, inner, log: list, name=None):
        self.inner, self.log, self.name = inner, log, name

    def update(self, token_ids):
        self.log.append(("update", self.name, list(token_ids)))
        self.inner.update(token_ids)

    def fill_mask(self, bitmask, row=0):
        self.log.append(("fill", self.name))
        self.inner.fill_mask(bitmask, row)

    def fork(self):  # (each row's fork named apart)
        return Logged(self.inner.fork(), self.log, object())

    def forward(self, *args, **options):
        self.log.append(("forward",))
        return self.inner.forward(*args, **options)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.parametrize("decoder", [argmax(), sample(2, 1.0)], ids=lambda d: d.kind)
def test_checkers_take_a_pick_after_the_next_pass_is_queued(vocab, model, compiled, decoder):
    """A row that goes on gives its checker the token picked at pass ``k``
    only after pass ``k + 1`` is queued (on a GPU: while it computes, with
    the masks), before that pass's masks; a row that ends takes its last
    token at once. The output is the same as checkers updated in place."""
    base = compiled["json_schema"]
    prompts = [[vocab.eos_id], [vocab.eos_id, 12]]
    log: list = []
    checkers = [Logged(base.checker(), log) for _ in prompts]
    options = {"max_len": 20, "seed": 3, "forced": False}
    logged = generate(Logged(model, log), vocab, prompts, checkers, decoder, **options)
    plain = generate(model, vocab, prompts, base, decoder, **options)
    assert _tokens(logged) == _tokens(plain)
    passes = [i for i, event in enumerate(log) if event[0] == "forward"]
    assert len(passes) == len(logged.steps) > 2
    deferred = 0
    for start, stop in zip(passes, [*passes[1:], len(log)], strict=True):
        kinds = [event[0] for event in log[start + 1 : stop]]
        fills = [k for k, kind in enumerate(kinds) if kind == "fill"]
        # updates before the pass's first fill: the picks of the pass before
        deferred += sum(kind == "update" for kind in kinds[: fills[0] if fills else 0])
        # updates after its last fill: only rows taking their last token
        for k in range(fills[-1] + 1 if fills else 0, len(kinds)):
            if kinds[k] == "update":
                name = log[start + 1 + k][1]
                assert not any(e[0] == "update" and e[1] == name for e in log[start + 2 + k :])
    # every pick but those ending a row at once (EOS, max_len); a row the
    # constraint finishes ("finished") ends at a pass's masks, its picks deferred
    picks = sum(len(g.token_ids) + (g.finish_reason == "eos") for g in logged.sequences)
    ends = sum(g.finish_reason in ("eos", "max_len") for g in logged.sequences)
    assert deferred == picks - ends > 0


def test_bitmasks_reach_the_device_from_pinned_memory_or_on_it(vocab, model, monkeypatch):
    """Every bitmask the step applies is on the logits' device or, on a
    GPU, in pinned memory: a copy from pageable memory may wait for the
    forward pass that the masks are filled beside. The step where one row
    is forced and the other picks applies the picking row's mask alone
    (selected from the filled rows on the device); this runs on a CPU too,
    the memory check only with ``CONSTRAIN_TEST_DEVICE=cuda``
    (``benchmarks/gpu/check.sh tests``)."""
    import constrain_api.decoding.sampling as sampling

    seen = []

    def recording(logits, bitmask, **options):
        pinned = bitmask.device.type == "cpu" and logits.is_cuda and bitmask.is_pinned()
        seen.append((bitmask.shape[0], bitmask.device == logits.device or pinned))
        return ca.apply_bitmask_(logits, bitmask, **options)

    monkeypatch.setattr(sampling, "apply_bitmask_", recording)
    naive = ca.get("naive")
    forced = naive.compile(ca.Regex(r'\{"name": "(ada|bob)", "tags": \[\]\}'), vocab).checker()
    free = naive.compile(ca.Regex(REGEX), vocab).checker()
    result = generate(model, vocab, [[vocab.eos_id]] * 2, [forced, free], argmax(), max_len=30)
    assert all(g.complete for g in result.sequences)
    assert all(on_device for _, on_device in seen)
    assert {rows for rows, _ in seen} == {1, 2}  # (one row's mask alone, and both)


class Drafting:
    """A checker that proposes drafts from a script, delegating the rest."""

    def __init__(self, inner, script: list[int]):
        self.inner, self.script, self.consumed = inner, script, []

    def propose(self, max_tokens: int) -> list[int]:
        n = len(self.consumed)
        return self.script[n : n + max_tokens]

    def update(self, token_ids):
        self.inner.update(token_ids)
        self.consumed.extend(token_ids)

    def rollback(self, n):
        self.inner.rollback(n)
        del self.consumed[len(self.consumed) - n :]

    def fork(self):
        twin = Drafting(self.inner.fork(), self.script)
        twin.consumed = list(self.consumed)
        return twin

    def __getattr__(self, name):
        return getattr(self.inner, name)


class LoggedDrafting(Logged):
    """A :class:`Logged` checker that also logs each ``propose``."""

    def propose(self, max_tokens):
        self.log.append(("propose", self.name, max_tokens))
        return self.inner.propose(max_tokens)

    def fork(self):
        return LoggedDrafting(self.inner.fork(), self.log, object())


def test_rows_that_only_guess_take_their_picks_after_the_next_pass_is_queued(vocab):
    """Drafts that are always right on a model whose wider pass costs too
    much (measured by a first call): the row only guesses, and a guess is
    never fed, so the row gives its checker each pick once the next pass is
    queued and guesses then, before that pass's masks (on a GPU, while the
    pass computes), as a row without drafts does. Where the drafts are fed
    (``draft_policy="always"``) the row takes its picks at once: its next
    draft is read from the checker. Same output either way."""
    target = vocab.encode("a") * 24
    compiled = ca.get("naive").compile(ca.Regex("[ab]{24}"), vocab)
    lm = ScriptedLM([*target, vocab.eos_id], width=vocab.size, eos_id=vocab.eos_id,
                    prompt_length=1)  # fmt: skip
    paced = PacedLM(lm, 0.002, 0.02)

    def run(policy):
        log: list = []
        checker = LoggedDrafting(Drafting(compiled.checker(), target), log)
        result = generate(Logged(paced, log), vocab, [[vocab.eos_id]], [checker], argmax(),
                          forced=False, speculative=4,
                          draft_policy=policy, draft_source="checker")  # fmt: skip
        assert _tokens(result) == [target]
        passes = [i for i, event in enumerate(log) if event[0] == "forward"]
        shadowed = guessed = 0  # passes whose first events are an update, (a guess,) the fill
        for start in passes:
            first = [event[0] for event in log[start + 1 : start + 4]]
            guess = first[:3] == ["update", "propose", "fill"] and log[start + 2][2] == 1
            shadowed += guess or first[:2] == ["update", "fill"]
            guessed += guess
        return result, shadowed, guessed

    run("measured")  # (what a wider pass costs this model)
    guessing, shadowed, guessed = run("measured")
    # (guesses after 4, 8 and 16 passes: far from paying, ever more rarely)
    assert shadowed >= guessing.totals()["forward_passes"] - 4 and guessed >= 2
    drafting, shadowed, _ = run("always")
    assert drafting.totals()["accepted"] > 0 and shadowed == 0


@pytest.mark.parametrize("good", [True, False], ids=["right-drafts", "wrong-drafts"])
def test_speculative_drafts_verify_to_the_same_output(vocab, model, compiled, good):
    base = compiled["json_schema"]
    plain = generate(model, vocab, [[vocab.eos_id]], base, argmax())
    (expected,) = plain.sequences
    script = expected.token_ids if good else vocab.encode('{"name":"bob","age":7,"ok":false}')
    checker = Drafting(base.checker(), script)
    spec = generate(model, vocab, [[vocab.eos_id]], [checker], argmax(), speculative=4,
                    draft_policy="always", draft_source="checker")  # fmt: skip
    (g,) = spec.sequences
    assert g.token_ids == expected.token_ids
    assert g.score == pytest.approx(expected.score, abs=1e-3)
    totals = spec.totals()
    assert totals["drafted"] > 0
    if good:
        assert totals["accepted"] > 0
        assert totals["forward_passes"] < plain.totals()["forward_passes"]
    assert checker.consumed == []  # the given checker is forked, never mutated


@pytest.mark.parametrize(
    ("right_from", "drafted", "resumed"),
    [(0, None, True), (6, None, True), (None, 4, False)],
    ids=["right", "right-after-6", "never-right"],
)
def test_drafts_follow_how_the_last_ones_fared(vocab, right_from, drafted, resumed):
    """A row whose draft is rejected at its first token stops drafting (so
    drafts that always miss cost one draft, not one per step), guesses the
    next token each step, and drafts again once a guess equals the pick;
    drafts that hold stay at full length. The output never changes."""
    a, b = vocab.encode("a"), vocab.encode("b")
    assert len(a) == len(b) == 1
    target = a * 16
    compiled = ca.get("naive").compile(ca.Regex("[ab]{16}"), vocab)
    lm = ScriptedLM([*target, vocab.eos_id], width=vocab.size, eos_id=vocab.eos_id,
                    prompt_length=1)  # fmt: skip
    plain = generate(lm, vocab, [[vocab.eos_id]], compiled, argmax(), forced=False)
    assert plain.sequences[0].token_ids == target
    wrong = len(target) if right_from is None else right_from
    script = b * wrong + target[wrong:]
    checker = Drafting(compiled.checker(), script)
    spec = generate(lm, vocab, [[vocab.eos_id]], [checker], argmax(), speculative=4,
                    draft_policy="always", draft_source="checker", forced=False)  # fmt: skip
    assert spec.sequences[0].token_ids == target
    totals, passes = spec.totals(), plain.totals()["forward_passes"]
    if drafted is not None:  # the first draft of 4, then guesses only
        assert totals["drafted"] == drafted and totals["accepted"] == 0
        assert totals["forward_passes"] == passes
    if resumed:
        assert totals["accepted"] > 0 and totals["forward_passes"] < passes
    if right_from == 0:  # every draft kept whole: 4 tokens a pass, plus the pick
        assert totals["accepted"] == totals["drafted"]
        assert totals["forward_passes"] <= -(-passes // 5) + 1


def test_a_batch_feeds_drafts_only_when_every_row_has_one(vocab):
    """Rows move in lockstep: while one row drafts nothing, the others'
    drafts are held back (the batch takes as many passes as its longest
    row); once every row has a draft, they are fed. The output never changes."""
    target = vocab.encode("a") * 16
    compiled = ca.get("naive").compile(ca.Regex("[ab]{16}"), vocab)
    lm = ScriptedLM([*target, vocab.eos_id], width=vocab.size, eos_id=vocab.eos_id,
                    prompt_length=1)  # fmt: skip
    prompts = [[vocab.eos_id], [vocab.eos_id]]
    plain = generate(lm, vocab, prompts, compiled, argmax(), forced=False)
    assert all(g.token_ids == target for g in plain.sequences)
    passes = plain.totals()["forward_passes"]
    silent = compiled.checker()  # (naive's checkers propose nothing)
    assert not hasattr(silent, "propose")
    mixed = generate(lm, vocab, prompts, [Drafting(compiled.checker(), target), silent],
                     argmax(), speculative=4,
                     draft_policy="always", draft_source="checker", forced=False)  # fmt: skip
    assert [g.token_ids for g in mixed.sequences] == [target, target]
    assert mixed.totals()["drafted"] == 0 and mixed.totals()["forward_passes"] == passes
    both = generate(lm, vocab, prompts, [Drafting(compiled.checker(), target)] * 2,
                    argmax(), speculative=4,
                    draft_policy="always", draft_source="checker", forced=False)  # fmt: skip
    assert [g.token_ids for g in both.sequences] == [target, target]
    assert both.totals()["accepted"] > 0 and both.totals()["forward_passes"] < passes


def test_speculative_sampling_keeps_the_distribution(vocab, model):
    """A draft token is kept iff the sample equals it: the law of the first
    token must not move towards the draft."""
    compiled = ca.get("naive").compile(ca.Regex("[abc]x"), vocab)
    n = 400
    plain = generate(model, vocab, [[vocab.eos_id]], compiled, sample(n, 3.0), seed=0)
    shares = {c: sum(g.data[:1] == c for g in plain.sequences) / n for c in (b"a", b"b", b"c")}
    letter = min(shares, key=lambda c: abs(shares[c] - 0.5))
    assert 0.05 < shares[letter] < 0.95  # the test means something only if it is not sure
    checker = Drafting(compiled.checker(), vocab.encode(letter.decode()))
    spec = generate(
        model,
        vocab,
        [[vocab.eos_id]],
        [checker],
        sample(n, 3.0),
        speculative=1,
        seed=1,
        draft_policy="always",
        draft_source="checker",
    )
    share_spec = sum(g.data[:1] == letter for g in spec.sequences) / n
    assert spec.totals()["drafted"] >= n
    assert abs(share_spec - shares[letter]) < 0.1
    assert all(re.fullmatch(rb"[abc]x", g.data) for g in spec.sequences)


@pytest.mark.parametrize("drafts", ["right", "wrong", "mixed"])
def test_speculative_sampling_draws_what_plain_sampling_draws(vocab, model, compiled, drafts):
    """A token's random draw depends on its index in the output, not on the
    pass that judged it: sampling with drafts gives the tokens sampling
    without them gives, for the same seed (drafts right or wrong). With one
    row's drafts right and the other's wrong (``mixed``), the pass keeps the
    slots of the first row's draft, so the second row's rejected ones stay
    in the cache between kept slots: masked out of its attention, never
    read by the model (a slot left attended changes its next logits)."""
    base = compiled["json_schema"]
    decoder = sample(1, 2.0)
    prompts = [[vocab.eos_id], [vocab.eos_id]]
    plain = generate(model, vocab, prompts, base, decoder, seed=7, max_len=40)
    scripts = [g.token_ids for g in plain.sequences]
    assert scripts[0] != scripts[1]  # the draws differ by row
    wrong = vocab.encode('{"name":"bob","age":7,"ok":false}')
    if drafts == "wrong":
        scripts = [wrong] * 2
    elif drafts == "mixed":
        scripts = [scripts[0], wrong]
    checkers = [Drafting(base.checker(), script) for script in scripts]
    spec = generate(model, vocab, prompts, checkers, decoder, seed=7, max_len=40,
                    speculative=4, draft_policy="always", draft_source="checker")  # fmt: skip
    assert spec.totals()["drafted"] > 0
    if drafts != "wrong":
        assert spec.totals()["forward_passes"] < plain.totals()["forward_passes"]
    assert _tokens(spec) == _tokens(plain)
    # the draws can outlast a slightly different law; the scores cannot (the
    # pass's other shapes move them by 1e-6 at most)
    scores = [g.score for g in spec.sequences]
    assert scores == pytest.approx([g.score for g in plain.sequences], abs=1e-4)


class PacedLM:
    """A scripted model whose forward pass sleeps ``base`` seconds plus
    ``per_slot`` per token fed beyond one per row: what drafts cost it."""

    def __init__(self, inner, base: float, per_slot: float):
        self.inner, self.base, self.per_slot = inner, base, per_slot
        self.width, self.device = inner.width, inner.device

    def forward(self, input_ids, attention_mask, position_ids, cache):
        rows, width = input_ids.shape
        time.sleep(self.base + self.per_slot * rows * (width - 1))
        return self.inner.forward(input_ids, attention_mask, position_ids, cache)

    def select_rows(self, cache, rows):
        return self.inner.select_rows(cache, rows)


@pytest.mark.parametrize("pays", [True, False], ids=["wide-passes-cheap", "wide-passes-dear"])
def test_measured_drafts_are_fed_only_while_they_pay(vocab, pays):
    """Drafts that are always right: on a model whose pass costs the same
    at any width they are kept (a plain pass measured now and then); on one
    whose pass costs 25 times more with a draft of four than without, a
    drafted pass advances five tokens at that cost, so after trying them
    (with the prompt, then once timed) the loop decodes without drafts but
    for a re-measured one now and then. What a pass costs is kept with the
    model: a second call goes on from it. The output is the same either way."""
    target = vocab.encode("a") * 24
    compiled = ca.get("naive").compile(ca.Regex("[ab]{24}"), vocab)
    lm = ScriptedLM([*target, vocab.eos_id], width=vocab.size, eos_id=vocab.eos_id,
                    prompt_length=1)  # fmt: skip
    paced = PacedLM(lm, 0.02, 0.0) if pays else PacedLM(lm, 0.005, 0.03)

    def run(policy):
        return generate(paced, vocab, [[vocab.eos_id]], [Drafting(compiled.checker(), target)],
                        argmax(), speculative=4,
                        draft_policy=policy, draft_source="checker", forced=False)  # fmt: skip

    always, first, again = run("always"), run("measured"), run("measured")
    assert _tokens(always) == _tokens(first) == _tokens(again) == [target]
    passes = always.totals()["forward_passes"]
    drafted = [sum(1 for s in r.steps if s.drafted) for r in (first, again)]
    if pays:
        # (without drafts: 25 passes; a plain pass or two measured, and
        # passes held up by other processes moving the medians a little)
        assert first.totals()["forward_passes"] <= passes + 3
        assert again.totals()["forward_passes"] <= passes + 2
        assert drafted[1] >= again.totals()["forward_passes"] - 2
    else:
        assert drafted[0] <= 4 and drafted[1] <= 2  # tried, then re-measured now and then
        assert again.totals()["forward_passes"] >= len(target) - 8


class Counting(Drafting):
    """A drafting checker that logs the ``max_tokens`` of each ``propose``."""

    def __init__(self, inner, script, calls: list[int]):
        super().__init__(inner, script)
        self.calls = calls

    def propose(self, max_tokens):
        self.calls.append(max_tokens)
        return super().propose(max_tokens)

    def fork(self):
        twin = Counting(self.inner.fork(), self.script, self.calls)
        twin.consumed = list(self.consumed)
        return twin


def test_rows_whose_drafts_would_not_pay_only_guess(vocab):
    """Drafts that are always right, on a model whose pass costs 25 times
    more with a draft of four than without: once the cost is measured (a
    first call), a row does not propose a full draft each step only for it
    to be held back; it guesses one token a pass (all a held-back draft
    would tell), and proposes a full draft again only for a drafted pass
    re-measured now and then. Same output."""
    target = vocab.encode("a") * 24
    compiled = ca.get("naive").compile(ca.Regex("[ab]{24}"), vocab)
    lm = ScriptedLM([*target, vocab.eos_id], width=vocab.size, eos_id=vocab.eos_id,
                    prompt_length=1)  # fmt: skip
    paced = PacedLM(lm, 0.002, 0.02)
    calls: list[int] = []

    def run():
        calls.clear()
        checker = Counting(compiled.checker(), target, calls)
        return generate(paced, vocab, [[vocab.eos_id]], [checker], argmax(), speculative=4,
                        draft_source="checker", forced=False)  # fmt: skip

    run()
    again = run()
    assert _tokens(again) == [target]
    passes = again.totals()["forward_passes"]
    drafted = sum(1 for s in again.steps if s.drafted)
    assert passes >= len(target) - 8  # decoded without drafts but for a few
    full = sum(1 for n in calls if n > 1)
    assert full <= 2 * drafted + 2  # a full draft only around a drafted pass
    assert len(calls) <= passes + 1  # one proposal a pass at most


class _Guessing:
    """A checker stand-in that proposes token 7 and counts ``propose(1)``."""

    def __init__(self):
        self.guesses = 0

    def propose(self, max_tokens):
        self.guesses += max_tokens == 1
        return [7] * max_tokens

    def validate(self, draft):
        return len(draft)


def _guess_passes(drafts: Drafts, row: Row, passes: int, first: int = 0) -> list[int]:
    """Drive ``drafts`` through ``passes`` passes of ``row`` alone, its
    guesses right every other time: the passes (numbered from ``first``) in
    which the row asked for a guess (its checker is a :class:`_Guessing`)."""
    asked = []
    for n in range(first, first + passes):
        before = row.checker.guesses
        drafts.hold_back([row])
        assert not drafts.drafting and not row.draft
        drafts.observe(row, 7 if row.checker.guesses % 2 else 8)  # (7: the guess)
        drafts.propose(row)
        if row.checker.guesses > before:
            asked.append(n + 1)
    return asked


@pytest.mark.parametrize("drafted_pass_s", [2.5, 10.0], ids=["near-paying", "far-from-it"])
def test_rows_guess_each_pass_only_while_drafts_come_near_paying(drafted_pass_s):
    """A row right about half the time (drafts of four would advance 1.9
    tokens a pass) on a model whose drafted pass (five tokens) costs 2.5 or
    10 plain ones: drafts do not pay either way. Near paying (within a factor
    ``CLOSE``), the row guesses each pass, so its record soon shows when they
    would; far from it, after ``GUESS_EVERY`` passes, then after twice as
    many each time its judged guesses leave drafts far from paying, up to
    ``GUESS_EVERY_MOST``: a guess a pass would cost a ``propose`` each step
    for a record that could not tip the choice."""
    from constrain_api.decoding.drafts import CLOSE, GUESS_EVERY, GUESS_EVERY_MOST

    class Model:  # (what the pass costs is kept per model)
        pass

    model, passes = Model(), 40
    drafts = Drafts(4, 1_000, frozenset(), "measured", model)
    drafts.cost.add(False, 1, 1.0)
    drafts.cost.add(True, 5, drafted_pass_s)
    row = Row(0, 0, _Guessing(), [1])
    drafts.start(row)
    asked = _guess_passes(drafts, row, passes)
    gain = drafts.cost.gain([row], [4])
    near = gain >= 1 / CLOSE
    assert near == (drafted_pass_s < 5) and gain < 1
    assert (GUESS_EVERY, GUESS_EVERY_MOST) == (4, 16)
    assert asked == (list(range(1, passes + 1)) if near else [4, 8, 16, 32])


def test_rows_guess_each_pass_again_once_drafts_come_near_paying():
    """Drafts far from paying (a drafted pass ten plain ones): the row
    guesses ever more rarely. Then drafted passes measure 2.5 plain ones:
    at the next weighing of its judged guesses (at most
    ``GUESS_EVERY_MOST`` passes on), drafts come near paying and the row
    guesses every pass again."""
    from constrain_api.decoding.drafts import GUESS_EVERY_MOST

    class Model:
        pass

    drafts = Drafts(4, 1_000, frozenset(), "measured", Model())
    drafts.cost.add(False, 1, 1.0)
    drafts.cost.add(True, 5, 10.0)
    row = Row(0, 0, _Guessing(), [1])
    drafts.start(row)
    assert _guess_passes(drafts, row, 40) == [4, 8, 16, 32]
    for _ in range(9):  # (the medians of the recent drafted passes)
        drafts.cost.add(True, 5, 2.5)
    asked = _guess_passes(drafts, row, 2 * GUESS_EVERY_MOST, first=40)
    assert asked[0] == 48 and asked == list(range(48, 40 + 2 * GUESS_EVERY_MOST + 1))


@pytest.mark.parametrize("refused", [True, False], ids=["refused-token", "eos-first"])
def test_a_proposal_cut_to_nothing_is_judged_as_a_guess(refused):
    """A proposal whose first token the checker would refuse, or EOS (never
    drafted), feeds nothing, yet its first token is judged against the pick
    like a guess: the row's record moves (a wrong one lowers it, a right one
    raises it), instead of the row proposing the same draft unjudged."""
    eos = 2

    class Proposing(_Guessing):
        def propose(self, max_tokens):
            return [9 if refused else eos, 7, 7][:max_tokens]

        def validate(self, draft):
            return 0 if refused else len(draft)

    drafts = Drafts(4, 1_000, frozenset({eos}), "always")
    row = Row(0, 0, Proposing(), [1])
    drafts.start(row)
    drafts.hold_back([row])  # (the first pass: the rows propose)
    assert row.draft == [] and row.guess == (9 if refused else eos)
    drafts.observe(row, 5)  # the pick: not the guess
    assert row.tries == 1 and row.hits == 0 and row.guess is None
    drafts.propose(row)
    drafts.observe(row, row.guess)  # right this time
    assert row.tries > 1 and row.hits == 1


class MaskRecorder(PacedLM):
    """Records, per forward pass, the cache slots and whether every one is
    attended; ``drop``: whether it offers ``drop_slots`` (the inner model's)."""

    def __init__(self, inner, drop: bool):
        super().__init__(inner, 0.0, 0.0)
        self.calls: list[tuple[int, bool]] = []
        if drop:
            self.drop_slots = inner.drop_slots

    def forward(self, input_ids, attention_mask, position_ids, cache):
        self.calls.append((attention_mask.shape[1], bool(attention_mask.all())))
        return super().forward(input_ids, attention_mask, position_ids, cache)


def test_rejected_draft_slots_at_the_end_are_dropped_where_the_model_can(vocab):
    """A row's rejected draft tokens are the cache's last slots: a model with
    ``drop_slots`` loses them (every pass attends to all its slots, as many
    as the tokens kept); one without keeps them masked out. Same output."""
    a, b = vocab.encode("a"), vocab.encode("b")
    target = a * 16
    compiled = ca.get("naive").compile(ca.Regex("[ab]{16}"), vocab)
    script = (a * 2 + b) * 6  # each draft of 4 kept for two tokens, then wrong

    def run(drop: bool):
        lm = ScriptedLM([*target, vocab.eos_id], width=vocab.size, eos_id=vocab.eos_id,
                        prompt_length=1)  # fmt: skip
        recorder = MaskRecorder(lm, drop)
        result = generate(recorder, vocab, [[vocab.eos_id]], [Drafting(compiled.checker(), script)],
                          argmax(), speculative=4,
                          draft_policy="always", draft_source="checker", forced=False)  # fmt: skip
        return result, recorder.calls

    (dropped, calls), (kept, holes) = run(True), run(False)
    assert _tokens(dropped) == _tokens(kept) == [[*target]]
    assert dropped.totals()["drafted"] > dropped.totals()["accepted"] > 0
    assert all(attended for _, attended in calls)
    assert not all(attended for _, attended in holes)
    assert calls[-1][0] < holes[-1][0]


def _rows(n: int, right: int, wrong: int, draft: int = 4) -> list[Row]:
    """``n`` rows whose record is ``right`` of ``right + wrong`` draft tokens,
    each with a draft of ``draft`` tokens pending."""
    rows = [Row(0, slot, None, [1]) for slot in range(n)]
    for row in rows:
        row.hits, row.tries, row.draft = right, right + wrong, [2] * draft
    return rows


def test_expected_advance_is_the_fewest_tokens_a_row_keeps():
    """One row at even odds: 1 + 1/2 + 1/4 + 1/8 + 1/16. Sixteen rows right
    four times in five: some row almost surely misses its first token. A row
    nearly always right keeps almost all of its draft."""
    assert expected_advance(_rows(1, 0, 0)) == pytest.approx(1.9375)
    assert expected_advance(_rows(16, 3, 0)) < 1.05  # (3 + 1) / (3 + 2) each
    assert expected_advance(_rows(1, 98, 0)) > 4.8
    assert expected_advance(_rows(2, 98, 0, draft=1)) == pytest.approx(1 + (99 / 100) ** 2)


def _simulate(rows, seconds, passes: int = 200):
    """Drive a DraftCost through ``passes`` passes of ``rows`` (every row with
    a draft); ``seconds(fed)``: a pass's time. The passes that carried drafts."""
    policy, chosen = DraftCost(), []
    fed = len(rows)
    for _ in range(passes):
        drafted = policy.drafts_pay(rows)
        width = fed + (sum(len(row.draft) for row in rows) if drafted else 0)
        policy.add(drafted, width, seconds(width))
        chosen.append(drafted)
    return chosen


def test_draft_cost_weighs_the_advance_against_the_wider_pass():
    """A row right nine times in ten expects about 4.1 tokens a drafted pass.
    A pass costing 0.2 + fed (a drafted one 4.3 times a plain one, a close
    call): drafts are tried, a plain pass measured, then plain passes, with
    a drafted one re-measured after 16 times as many passes as it has
    measurements, at most 64. A pass costing 1 + fed / 3 (drafted 2 times
    plain): drafts, a plain pass re-measured as often. A pass costing
    1 + fed / 10: drafts, by far; nothing re-measured. Rows that keep
    missing draft nothing and measure nothing, however cheap a wider pass."""
    sure = _rows(1, 9, 1)
    dear = _simulate(sure, lambda fed: 0.2 + fed)
    assert dear[:2] == [True, False]
    assert list(np.diff(np.flatnonzero(dear))) == [18, 34, 50, 66]
    close = _simulate(sure, lambda fed: 1 + fed / 3)
    assert close[:3] == [True, False, True]
    assert list(np.diff(np.flatnonzero(np.logical_not(close)))) == [18, 34, 50, 66]
    cheap = _simulate(sure, lambda fed: 1 + fed / 10)
    assert cheap[:3] == [True, False, True] and sum(cheap) == len(cheap) - 1
    assert not any(_simulate(_rows(16, 3, 2), lambda fed: 1.0))


def test_new_rows_start_from_what_the_constraints_rows_earned(vocab):
    """A row of a constraint whose earlier rows were right nine times in ten
    starts with that record (worth three tokens), so a draft can ride along
    with its prompt; a row of another constraint starts at even odds."""
    drafts = Drafts(4, 64, frozenset({vocab.eos_id}))
    seen, other = ca.get("naive").compile(ca.Regex("a+"), vocab), object()
    earlier = _rows(2, 9, 1)
    drafts.remember(earlier, seen)
    fresh, known = Row(0, 0, None, [1]), Row(0, 1, None, [1])
    drafts.start(fresh, other)
    drafts.start(known, seen)
    assert acceptance(fresh) == 0.5
    assert acceptance(known) == pytest.approx((3 * 0.9 + 1) / 5)


def test_rows_guess_now_and_then_while_drafts_could_not_pay(vocab):
    """Sixteen rows whose drafts always miss: even full drafts could not
    advance the batch, so each row asks its checker for a guess after one
    pass in four, not every pass (a guess costs a ``propose``). Same output."""
    target = vocab.encode("a") * 16
    compiled = ca.get("naive").compile(ca.Regex("[ab]{16}"), vocab)
    calls: list[int] = []

    def run(policy):
        calls.clear()
        lm = ScriptedLM([*target, vocab.eos_id], width=vocab.size, eos_id=vocab.eos_id,
                        prompt_length=1)  # fmt: skip
        checker = Counting(compiled.checker(), vocab.encode("b") * 16, calls)
        result = generate(lm, vocab, [[vocab.eos_id]] * 16, [checker] * 16, argmax(),
                          speculative=4,
                          draft_policy=policy, draft_source="checker", forced=False)  # fmt: skip
        return result, len(calls)

    (always, asked_always), (measured, asked) = run("always"), run("measured")
    assert _tokens(always) == _tokens(measured) == [target] * 16
    passes = measured.totals()["forward_passes"]
    assert asked_always >= 16 * (passes - 1)  # every row, every pass
    assert asked <= 16 * (passes // 4 + 2)  # the first drafts, then a guess in four passes
    assert measured.totals()["drafted"] == 0


def test_draft_cost_is_not_moved_by_a_slow_pass():
    """Passes slowed now and then by something else (every fifth, ten times
    slower) do not turn cheap drafts off: the medians of recent passes set
    the line."""
    sure = _rows(1, 9, 1)
    count = iter(range(10**6))

    def seconds(fed):
        return (1 + fed / 10) * (10 if next(count) % 5 == 4 else 1)

    assert sum(_simulate(sure, seconds)) >= 190


def test_draft_policy_is_checked(vocab, model, compiled):
    with pytest.raises(ValueError, match="draft policy"):
        generate(model, vocab, [[vocab.eos_id]], compiled["regex"], speculative=2,
                 draft_policy="sometimes")  # fmt: skip
    with pytest.raises(ValueError, match="draft source must be one of"):
        generate(model, vocab, [[vocab.eos_id]], compiled["regex"], speculative=2,
                 draft_source="prompt")  # fmt: skip


# -- the transformers LogitsProcessor -------------------------------------------------------
def test_logits_processor_matches_generate_for_argmax(vocab, model, compiled):
    prompt = vocab.encode("The answer:")
    ours = generate(model, vocab, [prompt], compiled["regex"], argmax(), max_len=30)
    (g,) = ours.sequences
    processor = ConstrainedLogitsProcessor(compiled["regex"])
    out = model.model.generate(
        torch.tensor([prompt], device=model.device),
        attention_mask=torch.ones(1, len(prompt), dtype=torch.long, device=model.device),
        do_sample=False,
        max_new_tokens=30,
        logits_processor=[processor],
        eos_token_id=vocab.eos_id,
        pad_token_id=vocab.eos_id,
    )
    produced = out[0, len(prompt) :].tolist()
    assert produced[: len(g.token_ids)] == g.token_ids
    assert produced[len(g.token_ids) :] == [vocab.eos_id]


# -- parameters and errors ----------------------------------------------------------------
def test_top_k_and_top_p_filters():
    logits = torch.tensor([[3.0, 2.0, 1.0, 0.0]])
    kept = filter_(logits.clone(), Sampling(top_k=2))
    assert torch.isfinite(kept).tolist() == [[True, True, False, False]]
    probs = torch.softmax(logits, -1)[0].tolist()  # ~0.64, 0.24, 0.09, 0.03
    kept = filter_(logits.clone(), Sampling(top_p=probs[0] + 0.01))
    assert torch.isfinite(kept).tolist() == [[True, True, False, False]]
    kept = filter_(logits.clone(), Sampling(top_p=0.01))
    assert torch.isfinite(kept).tolist() == [[True, False, False, False]]


def test_penalties():
    logits = torch.tensor([[2.0, -2.0, 1.0]])
    seen = torch.tensor([[True, True, False]])
    counts = torch.tensor([[0.0, 2.0, 0.0]])
    out = apply_penalties_(logits.clone(), seen, counts, Sampling(repetition_penalty=2.0))
    assert out.tolist() == [[1.0, -4.0, 1.0]]
    out = apply_penalties_(
        logits.clone(), seen, counts, Sampling(frequency_penalty=0.5, presence_penalty=1.0)
    )
    assert out.tolist() == [[2.0, -4.0, 1.0]]


def _dense_penalties(logits, seen, counts, params):
    """The penalties over every logit: what a GPU runs, the CPU's reference."""
    out = logits.clone()
    if params.repetition_penalty != 1.0:
        p = params.repetition_penalty
        out = torch.where(seen, torch.where(out > 0, out / p, out * p), out)
    out -= counts * params.frequency_penalty
    out -= (counts > 0).to(out.dtype) * params.presence_penalty
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(
    "params",
    [
        Sampling(repetition_penalty=1.3),
        Sampling(frequency_penalty=0.7, presence_penalty=0.2),
        Sampling(repetition_penalty=0.8, frequency_penalty=0.5, presence_penalty=1.5),
    ],
    ids=["repetition", "frequency-presence", "all"],
)
@pytest.mark.parametrize("path", ["cpu", "dense"])
def test_cpu_penalties_touch_only_seen_logits_bit_for_bit_as_the_dense_ops(path, dtype, params):
    """On a CPU the penalties rewrite only the seen logits (prompt tokens
    seen but not counted, output tokens counted), through a strided view as
    the loop hands them; the result equals the dense ops bit for bit, a row
    with nothing seen included. ``dense``: the ops a GPU runs, here on a CPU."""
    import constrain_api.decoding.decoders as decoders_module

    penalize = apply_penalties_ if path == "cpu" else decoders_module._penalize_all_
    gen = torch.Generator().manual_seed(11)
    full = (torch.randn(4, 3, 500, generator=gen) * 4).to(dtype)
    full[:, :, 7] = 0.0
    before = full.clone()
    logits = full[:, 1]  # (a view of position 1)
    seen = torch.rand(4, 500, generator=gen) < 0.05
    seen[:, 7] = True
    seen[2] = False
    counts = torch.where(seen & (torch.rand(4, 500, generator=gen) < 0.5), 2.0, 0.0)
    expected = _dense_penalties(logits, seen, counts, params)
    out = penalize(logits, seen, counts, params)
    assert out.data_ptr() == logits.data_ptr()
    bits = torch.int16 if dtype == torch.bfloat16 else torch.int32
    assert torch.equal(full[:, 1].view(bits), expected.view(bits))
    assert torch.equal(full[:, [0, 2]], before[:, [0, 2]])
    assert torch.equal(full[2, 1], before[2, 1])
    assert not torch.equal(full[:, 1], before[:, 1])  # (the penalties did something)


@pytest.mark.parametrize("kind", ["json_schema", "grammar"])
@pytest.mark.parametrize(
    "decoder", [argmax(), sample(1, temperature=0.8)], ids=["argmax", "sample"]
)
def test_the_loop_penalizes_seen_logits_as_the_dense_ops_would(
    monkeypatch, vocab, model, compiled, kind, decoder
):
    """The loop with all three penalties decodes the same tokens with the
    same scores whether a CPU rewrites only the seen logits or runs the
    dense ops, over batches whose rows pick, are forced and finish."""
    import constrain_api.decoding.decoders as decoders_module

    prompts = [[vocab.eos_id], [vocab.eos_id, 5], [vocab.eos_id, 9, 9]]
    options = dict(
        max_len=24, seed=3, repetition_penalty=1.5, frequency_penalty=0.5, presence_penalty=0.3
    )
    fast = generate(model, vocab, prompts, compiled[kind], decoder, **options)

    def dense(logits, seen, counts, params):
        return logits.copy_(_dense_penalties(logits, seen, counts, params))

    monkeypatch.setattr(decoders_module, "_penalize_seen_", dense)
    slow = generate(model, vocab, prompts, compiled[kind], decoder, **options)
    assert [g.token_ids for g in fast.sequences] == [g.token_ids for g in slow.sequences]
    assert [g.score for g in fast.sequences] == [g.score for g in slow.sequences]
    plain = generate(model, vocab, prompts, compiled[kind], decoder, max_len=24, seed=3)
    assert [g.token_ids for g in plain.sequences] != [g.token_ids for g in fast.sequences]


def test_frequency_penalty_steers_away_from_repeats(vocab):
    target = vocab.encode("aaaaaa")
    assert len(set(target)) < len(target)  # a repeated token, or the test means nothing
    compiled = ca.get("naive").compile(ca.Regex("[a-z]{6}"), vocab)
    lm = ScriptedLM(target, width=vocab.size, eos_id=vocab.eos_id, strength=10.0)
    (plain,) = generate(lm, vocab, [[vocab.eos_id]], compiled).sequences
    assert plain.token_ids == target
    (penalized,) = generate(lm, vocab, [[vocab.eos_id]], compiled, frequency_penalty=20.0).sequences
    assert penalized.token_ids != target
    assert re.fullmatch(rb"[a-z]{6}", penalized.data)
    assert penalized.token_ids[0] == target[0]  # nothing to penalise yet at the first step


def test_the_bigram_protocol_model_runs_every_decoder(vocab, compiled):
    lm = Bigram(vocab.size + 5)
    for decoder in DECODERS:
        result = generate(lm, vocab, [[1], [2, 3]], compiled["regex"], decoder, seed=0)
        for g in result.sequences:
            assert _in_language("regex", g.data)


def test_bad_arguments(vocab, model, compiled):
    with pytest.raises(ValueError, match="empty"):
        generate(model, vocab, [[]], compiled["regex"])
    with pytest.raises(ValueError, match="backend"):
        generate(model, vocab, [[1]], ca.Regex("a"))
    with pytest.raises(ValueError, match="argmax or sample"):
        generate(model, vocab, [[1]], compiled["regex"], beam(2), opportunistic=True)
    with pytest.raises(ValueError, match="another vocabulary"):
        other = ca.Vocabulary.from_list([b"a", b"b", b"<eos>"], eos=2)
        generate(model, vocab, [[1]], ca.get("naive").compile(ca.Regex("a"), other))
    with pytest.raises(ValueError, match="max_len"):
        generate(model, vocab, [[1]], None, max_len=0)
    with pytest.raises(ValueError, match="temperature"):
        sample(2, 0.0)


def test_a_spec_with_a_backend_name_compiles(vocab, model):
    result = generate(model, vocab, [[1]], ca.Regex("(on|off)"), backend="naive")
    assert result.sequences[0].data in (b"on", b"off")


def test_best_ids_is_torch_argmax_on_every_kind_of_row():
    """The picks' argmax (numpy's on a CPU) follows torch's rule: the first
    of equal maxima, NaN the largest, all -inf gives 0; tensors that need
    grad or other dtypes take torch's own."""
    from constrain_api.decoding.decoders import best_ids

    rows = torch.randn(6, 300)
    rows[1, [7, 50]] = 9.0  # a tie: the first
    rows[2, 120] = float("nan")
    rows[3] = float("-inf")
    rows[4, :] = 0.0
    rows[4, 3] = -0.0
    rows[5, 299] = float("inf")
    for scores in (rows, rows.double(), rows.half(), rows.clone().requires_grad_()):
        assert best_ids(scores).tolist() == scores.argmax(dim=-1).tolist()
    assert best_ids(rows).tolist()[:4] == [int(rows[0].argmax()), 7, 120, 0]


class KeepRecorder:
    """Wraps ``tiny_model``, recording per pass the chunk's width and the
    positions asked for (``None``: all); ``keeps``: whether it offers
    ``keep`` (``keeps_positions``)."""

    def __init__(self, inner, keeps: bool):
        self.inner, self.keeps_positions = inner, keeps
        self.width, self.device = inner.width, inner.device
        self.calls: list[tuple[int, list[int] | None]] = []

    def forward(self, input_ids, attention_mask, position_ids, cache, **options):
        keep = options.get("keep")
        self.calls.append((input_ids.shape[1], None if keep is None else keep.tolist()))
        return self.inner.forward(input_ids, attention_mask, position_ids, cache, **options)

    def select_rows(self, cache, rows):
        return self.inner.select_rows(cache, rows)

    def drop_slots(self, cache, count):
        return self.inner.drop_slots(cache, count)


@pytest.mark.parametrize(
    "decoder", [*DECODERS[:3], "drafts"], ids=["argmax", "sample", "beam", "drafts"]
)
def test_the_model_computes_only_the_logits_the_loop_reads(vocab, model, compiled, decoder):
    """A model that keeps positions is asked, per pass, for the positions
    after each row's last pending token and after each draft token: for
    prompts of 9 and 4 tokens (right-padded), positions 3 and 8 of the
    first pass, not nine (with drafts of four riding along: 3-7 and 8-12 of
    13); a pass whose every position is read asks for none in particular.
    The output is the same as from the same model computing every
    position's logits."""
    base = compiled["json_schema"]
    prompts = [[vocab.eos_id, *range(10, 18)], [vocab.eos_id] * 4]
    options = {"max_len": 24, "seed": 5}
    if decoder == "drafts":
        plain = generate(model, vocab, prompts, base, argmax(), **options)
        checkers = [Drafting(base.checker(), g.token_ids) for g in plain.sequences]
        decoder, options = argmax(), {**options, "speculative": 4, "draft_policy": "always"}
        constraint = checkers
    else:
        constraint = base
    runs = {}
    for keeps in (True, False):
        lm = KeepRecorder(model, keeps)
        runs[keeps] = (generate(lm, vocab, prompts, constraint, decoder, **options), lm.calls)
    (kept, calls), (full, every) = runs[True], runs[False]
    assert _tokens(kept) == _tokens(full)
    assert all(keep is None for _, keep in every)
    if options.get("speculative"):  # drafts of four ride along with the prompts
        assert calls[0] == (13, list(range(3, 13)))
        assert kept.totals()["drafted"] > 0
    else:
        assert calls[0] == (9, [3, 8])
    for w, k in calls[1:]:  # (None where every position of a pass is read)
        assert k is None or (w > 1 and len(k) < w and k[-1] == w - 1), calls
