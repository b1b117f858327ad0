"""``ConstrainedLogitsProcessor`` inside transformers' own ``generate``."""

from __future__ import annotations

import re

import pytest
import torch
from constrain_conformance.corpus import small_vocabulary

import constrain_api as ca
from constrain_api.decoding import ConstrainedLogitsProcessor, tiny_model

PATTERN = r"(red|green|blue)-[0-9]{1,2}"


@pytest.fixture(scope="module")
def setup():
    vocab = small_vocabulary()
    model = tiny_model(vocab, seed=2, device="cpu")
    compiled = ca.get("naive").compile(ca.Regex(PATTERN), vocab)
    return vocab, model, compiled


def _outputs(vocab, out, prompt_len):
    texts = []
    for row in out[:, prompt_len:].tolist():
        if vocab.eos_id in row:
            row = row[: row.index(vocab.eos_id)]
        texts.append(vocab.decode(row))
    return texts


@pytest.mark.parametrize(
    "kwargs",
    [
        {"do_sample": False, "num_beams": 3, "num_return_sequences": 3},
        {"do_sample": True, "num_return_sequences": 4, "temperature": 2.0},
    ],
    ids=["beam", "sample"],
)
def test_generate_stays_in_the_language(setup, kwargs):
    vocab, model, compiled = setup
    prompt = torch.tensor([vocab.encode("colour:")] * 2)
    torch.manual_seed(0)
    processor = ConstrainedLogitsProcessor(compiled)
    out = model.model.generate(
        prompt,
        attention_mask=torch.ones_like(prompt),
        max_new_tokens=12,
        logits_processor=[processor],
        eos_token_id=vocab.eos_id,
        pad_token_id=vocab.eos_id,
        **kwargs,
    )
    texts = _outputs(vocab, out, prompt.shape[1])
    assert len(texts) == 2 * kwargs["num_return_sequences"]
    for text in texts:
        assert re.fullmatch(PATTERN.encode(), text), text


def test_reuse_starts_a_new_generation(setup):
    vocab, model, compiled = setup
    prompt = torch.tensor([vocab.encode("colour:")])

    def run(processor, p):
        out = model.model.generate(
            p,
            attention_mask=torch.ones_like(p),
            max_new_tokens=8,
            do_sample=False,
            logits_processor=[processor],
            eos_token_id=vocab.eos_id,
            pad_token_id=vocab.eos_id,
        )
        return out[0, p.shape[1] :].tolist()

    reused = ConstrainedLogitsProcessor(compiled)
    run(reused, prompt)
    assert run(reused, prompt[:, :-1]) == run(ConstrainedLogitsProcessor(compiled), prompt[:, :-1])
