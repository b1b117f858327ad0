"""Micro benchmarks of the mask plumbing every backend shares."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from constrain_api.masks import TokenMask, apply_bitmask_, bitmask_from_bool

LLAMA3_WIDTH = 128256


@pytest.fixture(scope="module")
def batch_64():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(64, LLAMA3_WIDTH, generator=gen)
    packed = bitmask_from_bool(torch.rand(64, LLAMA3_WIDTH, generator=gen) < 0.5)
    return logits, packed


def test_apply_bitmask_64x128256_cpu(benchmark, batch_64):
    logits, packed = batch_64
    work = logits.clone()

    def run():
        work.copy_(logits)
        apply_bitmask_(work, packed, vocab_size=LLAMA3_WIDTH)

    benchmark(run)


def test_copy_only_64x128256_cpu(benchmark, batch_64):
    """Baseline for the one above: the logits copy alone."""
    logits, _ = batch_64
    work = logits.clone()
    benchmark(work.copy_, logits)


def test_token_mask_allowed_ids_128256(benchmark):
    rng = np.random.default_rng(0)
    mask = TokenMask.from_bool(rng.random(LLAMA3_WIDTH) < 0.5)
    benchmark(mask.allowed_ids)
