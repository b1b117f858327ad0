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


# -- on a GPU: the fused kernel, the torch path and XGrammar's kernel on the
# same logits and bitmask (Llama-3's width), one apply per round, synchronized

CUDA_APPLIES = ("kernel", "torch", "xgrammar")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
@pytest.mark.parametrize("how", CUDA_APPLIES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("batch", [1, 16, 64])
def test_apply_bitmask_cuda(benchmark, monkeypatch, how, dtype, batch):
    from constrain_api import apply_kernel

    gen = torch.Generator().manual_seed(batch)
    logits = torch.randn(batch, LLAMA3_WIDTH, generator=gen).to(getattr(torch, dtype)).cuda()
    packed = bitmask_from_bool(torch.rand(batch, LLAMA3_WIDTH, generator=gen) < 0.5).cuda()
    if how == "xgrammar":
        xgrammar = pytest.importorskip("xgrammar", reason="xgrammar is not installed")

        def apply():
            xgrammar.apply_token_bitmask_inplace(logits, packed, vocab_size=LLAMA3_WIDTH)

    else:
        if how == "torch":
            monkeypatch.setenv(apply_kernel.ENV_VAR, "torch")
        elif not apply_kernel.usable(logits):
            pytest.skip("the fused kernel cannot run here (triton is not importable)")

        def apply():
            apply_bitmask_(logits, packed, vocab_size=LLAMA3_WIDTH)

    def run():
        apply()
        torch.cuda.synchronize()

    run()  # (the kernels' compilation)
    benchmark.extra_info["device"] = torch.cuda.get_device_name()
    benchmark(run)
