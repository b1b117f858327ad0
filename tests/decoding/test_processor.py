"""``ConstrainedLogitsProcessor`` inside transformers' own ``generate``: greedy,
beam search, sampling with finished rows padded, assisted decoding, reuse.

``CONSTRAIN_TEST_DEVICE=cuda`` runs them on a GPU.
"""

from __future__ import annotations

import os
import re

import pytest
import torch
from constrain_conformance.corpus import small_vocabulary

import constrain_api as ca
from constrain_api.decoding import ConstrainedLogitsProcessor, tiny_model

DEVICE = os.environ.get("CONSTRAIN_TEST_DEVICE", "cpu")
PATTERN = r"(red|green|blue)-[0-9]{1,2}"


@pytest.fixture(scope="module")
def vocab():
    return small_vocabulary()


@pytest.fixture(scope="module")
def model(vocab):
    return tiny_model(vocab, seed=2, device=DEVICE)


@pytest.fixture(scope="module")
def compiled(vocab):
    return ca.get("naive").compile(ca.Regex(PATTERN), vocab)


def _generate(model, vocab, processor, prompts, *, pad=None, **kwargs):
    """Left-pad ``prompts`` (lists of ids) and run ``generate``; returns the new ids per row."""
    pad = vocab.eos_id if pad is None else pad
    width = max(map(len, prompts))
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=model.device)
    mask = torch.tensor(
        [[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=model.device
    )
    out = model.model.generate(
        ids,
        attention_mask=mask,
        logits_processor=[processor],
        eos_token_id=vocab.eos_id,
        pad_token_id=pad,
        **{"max_new_tokens": 12, "do_sample": False, **kwargs},
    )
    return out[:, width:].tolist()


def _check_rows(vocab, rows, pad):
    """Every row ends on EOS, then only pads, and its text is in the language."""
    for row in rows:
        assert vocab.eos_id in row, row
        end = row.index(vocab.eos_id)
        assert all(t == pad for t in row[end + 1 :]), row
        assert re.fullmatch(PATTERN.encode(), vocab.decode(row[:end])), row


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"num_beams": 2, "num_return_sequences": 2},
        {"num_beams": 3, "num_return_sequences": 3},
        {"do_sample": True, "num_return_sequences": 6, "temperature": 3.0},
    ],
    ids=["greedy", "beam2", "beam3", "sample"],
)
def test_generate_stays_in_the_language(vocab, model, compiled, kwargs):
    pad = vocab.encode("Z")[0]  # a normal token: finished rows must not feed it to a checker
    prompts = [vocab.encode("colour:"), vocab.encode("hue=")]
    torch.manual_seed(0)
    rows = _generate(model, vocab, ConstrainedLogitsProcessor(compiled), prompts, pad=pad, **kwargs)
    assert len(rows) == 2 * kwargs.get("num_return_sequences", 1)
    _check_rows(vocab, rows, pad)
    if kwargs.get("do_sample"):
        # Rows finished at different steps, so pads followed EOS in some.
        assert len({row.index(vocab.eos_id) for row in rows}) > 1


def test_unconstrained_model_leaves_the_language(vocab, model, compiled):
    # The constraint does the work: the same model without it writes something else.
    prompt = [vocab.encode("colour:")]
    free = model.model.generate(
        torch.tensor(prompt, device=model.device),
        attention_mask=torch.ones(1, len(prompt[0]), dtype=torch.long, device=model.device),
        max_new_tokens=8,
        do_sample=False,
        eos_token_id=vocab.eos_id,
        pad_token_id=vocab.eos_id,
    )[0, len(prompt[0]) :].tolist()
    assert not re.fullmatch(PATTERN.encode(), vocab.decode(free))


def test_assisted_decoding_equals_greedy(vocab, model, compiled):
    # The draft model shares the processor; greedy verification keeps the output exact.
    assistant = tiny_model(vocab, seed=3, device=DEVICE)
    prompt = [vocab.encode("colour:")]
    plain = _generate(model, vocab, ConstrainedLogitsProcessor(compiled), prompt)
    assisted = _generate(
        model, vocab, ConstrainedLogitsProcessor(compiled), prompt, assistant_model=assistant.model
    )
    assert assisted == plain
    _check_rows(vocab, assisted, vocab.eos_id)


def test_prompt_length_counts_the_rest_as_generated(vocab, model, compiled):
    prompt = vocab.encode("colour:")
    processor = ConstrainedLogitsProcessor(compiled, prompt_length=len(prompt))
    (row,) = _generate(model, vocab, processor, [prompt + vocab.encode("gr")])
    text = vocab.decode(row[: row.index(vocab.eos_id)])
    assert text.startswith(b"een-") and re.fullmatch(PATTERN.encode(), b"gr" + text)


@pytest.mark.parametrize(
    "second",
    ["shorter", "longer", "other"],
)
def test_reuse_starts_a_new_generation(vocab, model, compiled, second):
    # Without reset(): the second prompt is shorter than the first, extends it
    # by tokens no row generated, or differs from it at the same length.
    first = vocab.encode("colour:")
    prompt = {
        "shorter": first[:-1],
        "longer": first + vocab.encode(" x"),
        "other": [*vocab.encode("hue="), first[-1]],
    }[second]
    reused = ConstrainedLogitsProcessor(compiled)
    _generate(model, vocab, reused, [first])
    fresh = _generate(model, vocab, ConstrainedLogitsProcessor(compiled), [prompt])
    assert _generate(model, vocab, reused, [prompt]) == fresh


def test_reset_between_generations(vocab, model, compiled):
    # A prompt that is the last one plus one token could be a continuation;
    # reset() says it is not.
    first = vocab.encode("colour:")
    prompt = first + vocab.encode(" ")
    reused = ConstrainedLogitsProcessor(compiled)
    _generate(model, vocab, reused, [first])
    reused.reset()
    fresh = _generate(model, vocab, ConstrainedLogitsProcessor(compiled), [prompt])
    assert _generate(model, vocab, reused, [prompt]) == fresh
    _check_rows(vocab, fresh, vocab.eos_id)
