"""Packed bitmasks: layout, conversions, apply_bitmask_ against a bool reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import constrain_api as ca
from constrain_api import masks
from constrain_api.masks import (
    SpecialBits,
    TokenMask,
    allocate_bitmask,
    allocate_bitmask_tensor,
    apply_bitmask_,
    bitmask_from_bool,
    bitmask_to_bool,
    bitmask_words,
    row_view,
    vocab_row,
)


def reference_apply(logits: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """The obvious implementation: a (batch, W) bool mask, padded with False."""
    out = logits.clone()
    full = torch.zeros_like(out, dtype=torch.bool)
    width = min(allowed.shape[-1], out.shape[-1])
    full[..., :width] = allowed[..., :width]
    out[~full] = float("-inf")
    return out


def test_layout_bit_i_and_31_of_word_i_shr_5():
    for token in (0, 1, 31, 32, 33, 63, 64, 99):
        m = TokenMask.from_ids([token], 100)
        word, bit = token >> 5, token & 31
        expected = np.zeros(bitmask_words(100), dtype=np.int32)
        expected[word] = np.uint32(1 << bit).view(np.int32)
        assert np.array_equal(m.words, expected), token
    # bit 31 is the sign bit of the int32 word
    assert TokenMask.from_ids([31], 32).words[0] == np.int32(-(2**31))


def test_words_and_allocation():
    assert [bitmask_words(v) for v in (0, 1, 32, 33, 128256)] == [0, 1, 1, 2, 4008]
    bm = allocate_bitmask(3, 70)
    assert bm.shape == (3, 3) and bm.dtype == np.int32 and not bm.any()
    t = allocate_bitmask_tensor(2, 70)
    assert t.shape == (2, 3) and t.dtype == torch.int32
    with pytest.raises(ValueError):
        bitmask_words(-1)


def test_token_mask_queries():
    m = TokenMask.from_ids([0, 5, 69], 70)
    assert m.allowed_ids().tolist() == [0, 5, 69]
    assert list(m) == [0, 5, 69]
    assert 5 in m and 6 not in m and 70 not in m and -1 not in m and "5" not in m
    assert m.count() == len(m) == 3
    assert m.to_bool().nonzero()[0].tolist() == [0, 5, 69]
    assert m == TokenMask.from_bool(m.to_bool())
    assert (m & TokenMask.from_ids([5, 6], 70)).allowed_ids().tolist() == [5]
    assert (m | TokenMask.from_ids([6], 70)).allowed_ids().tolist() == [0, 5, 6, 69]
    assert (m - TokenMask.from_ids([5], 70)).allowed_ids().tolist() == [0, 69]
    assert TokenMask.empty(70).count() == 0
    assert TokenMask.full(70).count() == 70
    assert "3 of 70" in repr(m)
    with pytest.raises(IndexError):
        TokenMask.from_ids([70], 70)
    with pytest.raises(ValueError):
        TokenMask(np.zeros(2, dtype=np.int32), 70)
    with pytest.raises(TypeError):
        TokenMask(np.zeros(3, dtype=np.int64), 70)
    with pytest.raises(ValueError):
        m & TokenMask.empty(71)


@given(st.lists(st.booleans(), min_size=0, max_size=200))
def test_bool_round_trip_numpy_and_torch(bits):
    arr = np.array(bits, dtype=bool)
    packed = bitmask_from_bool(arr)
    assert np.array_equal(bitmask_to_bool(packed, len(bits)), arr)
    assert TokenMask(packed, len(bits)).allowed_ids().tolist() == np.flatnonzero(arr).tolist()
    tensor = torch.tensor(bits, dtype=torch.bool)
    packed_t = bitmask_from_bool(tensor)
    assert packed_t.dtype == torch.int32
    assert np.array_equal(packed_t.numpy(), packed)
    assert torch.equal(bitmask_to_bool(packed_t, len(bits)), tensor)


def test_batched_conversions():
    rng = np.random.default_rng(0)
    allowed = rng.random((4, 77)) < 0.3
    packed = bitmask_from_bool(allowed)
    assert packed.shape == (4, 3)
    assert np.array_equal(bitmask_to_bool(packed, 77), allowed)
    assert torch.equal(bitmask_to_bool(torch.from_numpy(packed), 77), torch.from_numpy(allowed))


def test_row_view_writes_through_numpy_and_tensor():
    bm = allocate_bitmask(2, 64)
    row_view(bm, 1)[0] = 7
    assert bm[1, 0] == 7 and bm[0, 0] == 0
    t = allocate_bitmask_tensor(2, 64)
    row_view(t, 0)[1] = 9
    assert t[0, 1].item() == 9
    with pytest.raises(TypeError):
        row_view(np.zeros((1, 2), dtype=np.int64))
    with pytest.raises(IndexError):
        row_view(np.zeros(2, dtype=np.int32), 1)


def test_vocab_row_is_the_vocabularys_words_of_a_row_the_rest_zeroed():
    """A row as wide as the vocabulary is the row itself; a wider one (a
    bitmask sized for a model's padded logits) has its words past the
    vocabulary's zeroed and the view stops at them; other rows untouched."""
    exact = np.full((2, 3), 5, dtype=np.int32)
    view = vocab_row(exact, 1, 70)  # (3 words)
    assert view.shape == (3,) and np.shares_memory(view, exact) and (exact[1] == 5).all()
    for wide in (np.full((2, 6), 5, dtype=np.int32), torch.full((2, 6), 5, dtype=torch.int32)):
        view = vocab_row(wide, 1, 70)
        assert view.shape == (3,) and view.flags.c_contiguous
        view[:] = 7
        rows = np.asarray(wide)
        assert rows[1].tolist() == [7, 7, 7, 0, 0, 0] and (rows[0] == 5).all()
    with pytest.raises(ValueError, match="cannot hold"):
        vocab_row(exact, 0, 97)


@pytest.mark.parametrize("batch,vocab", [(64, 128256), (3, 100), (1, 32), (2, 33)])
def test_apply_bitmask_matches_bool_reference_bit_for_bit(batch, vocab):
    gen = torch.Generator().manual_seed(vocab)
    logits = torch.randn(batch, vocab, generator=gen)
    allowed = torch.rand(batch, vocab, generator=gen) < 0.5
    allowed[0] = False  # a row with nothing allowed
    allowed[-1, :5] = True
    packed = bitmask_from_bool(allowed)
    expected = reference_apply(logits, allowed)
    out = apply_bitmask_(logits, packed, vocab_size=vocab)
    assert out is logits
    assert torch.equal(logits, expected)  # bitwise: -inf where masked, untouched elsewhere


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("blend_from", [None, 0])
def test_apply_bitmask_on_cpu_writes_through_strided_views(monkeypatch, dtype, blend_from):
    """On a CPU the apply writes into the logits it is given, whatever their
    strides (the loop hands it a view of position 1 of ``[B, T, W]``
    logits), in every float dtype, and leaves the other positions alone:
    through the select (these 300 logits are below the blend's floor; float64
    always), and with the floor lifted (``blend_from`` 0) through the bit
    blend for float32/16/bfloat16."""
    import constrain_api.masks as masks_module

    if blend_from is not None:
        monkeypatch.setattr(masks_module, "_BLEND_LEAST", blend_from)
    gen = torch.Generator().manual_seed(7)
    full = torch.randn(3, 4, 100, generator=gen).to(dtype)
    before = full.clone()
    allowed = torch.rand(3, 90, generator=gen) < 0.3
    allowed[:, 10:40] = True  # a run, as most of a real mask
    view = full[:, 1]
    assert not view.is_contiguous()
    apply_bitmask_(view, bitmask_from_bool(allowed), vocab_size=90)
    expected = reference_apply(before[:, 1].float(), allowed).to(dtype)
    assert torch.equal(full[:, 1], expected)
    assert torch.equal(full[:, [0, 2, 3]], before[:, [0, 2, 3]])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("chunk", [None, 1])
def test_cpu_blend_is_bit_identical_to_a_select_for_special_values(monkeypatch, dtype, chunk):
    """The CPU blend rewrites bit patterns: an allowed NaN, +inf, -inf or
    -0.0 keeps its exact bits, a refused one becomes -inf's; with lanes
    built one row at a time (``chunk`` 1) as with the whole batch at once;
    the select path is never taken for these dtypes (at any size: the
    floor below which the select runs instead is lifted)."""
    import constrain_api.masks as masks_module

    monkeypatch.setattr(masks_module, "_BLEND_LEAST", 0)
    if chunk is not None:
        monkeypatch.setattr(masks_module, "_BLEND_CHUNK", chunk)

    def no_select(*args):
        raise AssertionError("the select path ran")

    monkeypatch.setattr(masks_module, "_refused_on_cpu", no_select)
    gen = torch.Generator().manual_seed(3)
    vocab, width = 75, 80
    specials = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 0.0])
    logits = torch.randn(5, width, generator=gen)
    logits[:, :5] = specials
    logits[:, 40:45] = specials
    logits = logits.to(dtype)
    allowed = torch.rand(5, vocab, generator=gen) < 0.5
    allowed[:, :5] = True  # the specials allowed, then refused further on
    allowed[:, 40:45] = False
    allowed[1] = False
    allowed[2] = True
    expected = reference_apply(logits, allowed)
    apply_bitmask_(logits, bitmask_from_bool(allowed), vocab_size=vocab)
    bits = torch.int16 if dtype != torch.float32 else torch.int32
    assert torch.equal(logits.view(bits), expected.view(bits))
    assert torch.isneginf(logits[:, vocab:]).all()


def test_cpu_float64_and_few_logits_take_the_select():
    import constrain_api.masks as masks_module

    assert not masks_module._blend_on_cpu(
        torch.zeros(1, 32), torch.zeros(1, 1, dtype=torch.int32), 32
    )

    assert not masks_module._blend_on_cpu(
        torch.zeros(1, 32, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.int32), 32
    )
    logits = torch.zeros(2, 40, dtype=torch.float64)
    allowed = torch.zeros(2, 40, dtype=torch.bool)
    allowed[0, 3] = allowed[1, 39] = True
    apply_bitmask_(logits, bitmask_from_bool(allowed), vocab_size=40)
    assert torch.isfinite(logits).nonzero().tolist() == [[0, 3], [1, 39]]


def test_cpu_apply_keeps_gradients_of_logits_that_require_them():
    """Logits computed with autograd on (a model run outside inference mode)
    are masked by ``masked_fill_``: the refused logits get no gradient, the
    allowed ones theirs; neither the bit blend (not differentiable) nor the
    select with ``out=`` (which autograd refuses) runs on them."""
    weights = torch.randn(2, 20_000, requires_grad=True)
    logits = weights * 2.0
    allowed = torch.rand(2, 20_000, generator=torch.Generator().manual_seed(5)) < 0.5
    apply_bitmask_(logits, bitmask_from_bool(allowed), vocab_size=20_000)
    assert torch.equal(torch.isfinite(logits), allowed)
    logits.sum().backward()  # (-inf, but a refused logit must pass on no gradient)
    assert torch.equal(weights.grad, allowed.float() * 2.0)


def test_apply_bitmask_numpy_bitmask_and_wider_logits():
    vocab, width = 70, 96  # the model pads its embedding rows past V
    allowed = np.zeros((2, vocab), dtype=bool)
    allowed[:, [1, 69]] = True
    packed = bitmask_from_bool(allowed)
    # Set padding bits on purpose: they must still never be allowed.
    packed[:, -1] |= np.int32(-1 << (vocab & 31))
    logits = torch.zeros(2, width)
    apply_bitmask_(logits, packed, vocab_size=vocab)
    finite = torch.isfinite(logits)
    assert finite.nonzero()[:, 1].tolist() == [1, 69, 1, 69]
    assert not finite[:, vocab:].any()


def test_apply_bitmask_vocab_size_defaults_to_the_bitmask_width():
    logits = torch.zeros(1, 40)
    packed = bitmask_from_bool(torch.ones(1, 40, dtype=torch.bool))  # 2 words = 64 bits
    apply_bitmask_(logits, packed)
    assert torch.isfinite(logits).all()


def test_apply_bitmask_one_dimensional_and_indices():
    allowed = torch.zeros(3, 10, dtype=torch.bool)
    allowed[:, 4] = True
    packed = bitmask_from_bool(allowed)
    logits = torch.zeros(3, 10)
    apply_bitmask_(logits, packed, vocab_size=10, indices=[1])
    assert torch.isfinite(logits[0]).all() and torch.isfinite(logits[2]).all()
    assert torch.isfinite(logits[1]).nonzero().flatten().tolist() == [4]
    one = torch.zeros(10)
    apply_bitmask_(one, packed[0], vocab_size=10)
    assert torch.isfinite(one).nonzero().flatten().tolist() == [4]


def test_apply_bitmask_errors():
    logits = torch.zeros(2, 10)
    with pytest.raises(TypeError):
        apply_bitmask_(logits, np.zeros((2, 1), dtype=np.int64))
    with pytest.raises(ValueError):
        apply_bitmask_(logits, np.zeros((3, 1), dtype=np.int32))
    with pytest.raises(ValueError):
        apply_bitmask_(logits, np.zeros((2, 1), dtype=np.int32), vocab_size=40)
    with pytest.raises(ValueError):
        apply_bitmask_(logits, np.zeros(1, dtype=np.int32))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_apply_bitmask_on_cuda_matches_cpu():
    allowed = torch.rand(8, 1000) < 0.5
    packed = bitmask_from_bool(allowed)
    cpu = torch.randn(8, 1000)
    gpu = cpu.cuda()
    apply_bitmask_(cpu, packed, vocab_size=1000)
    apply_bitmask_(gpu, packed, vocab_size=1000)
    assert torch.equal(gpu.cpu(), cpu)


class _Vocab:
    """The three attributes SpecialBits reads."""

    def __init__(self, size, eos, special):
        self.size, self.eos_ids, self.special_ids = (
            size,
            frozenset(eos),
            frozenset(special) | set(eos),
        )


def test_special_bits_clear_specials_padding_and_set_eos():
    vocab = _Vocab(70, eos=[2, 65], special=[0, 31, 40])
    bits = SpecialBits(vocab)
    row = np.full(bitmask_words(70), -1, dtype=np.int32)  # everything, padding included
    bits.finish_row(row, accepting=False)
    got = TokenMask(row, 70).allowed_ids().tolist()
    assert got == [i for i in range(70) if i not in (0, 2, 31, 40, 65)]
    assert bitmask_to_bool(row, 96)[70:].sum() == 0
    bits.finish_row(row, accepting=True)
    assert {2, 65} <= set(TokenMask(row, 70).allowed_ids().tolist())
    assert 0 not in TokenMask(row, 70)


@pytest.mark.parametrize(
    ("size", "special"),
    [
        (128_256, range(128_000, 128_256)),  # Llama-3: one block at the end (a slice)
        (32_000, [0, 1, 2]),  # Llama-2: the first word
        (5_000, [0, 2_500, 4_999]),  # spread over the row (a gather and scatter)
        (4_000, []),  # none
    ],
)
def test_special_bits_on_blocks_and_spread_ids(size, special):
    """Whichever way the special words are cleared (one slice when they
    lie together, an index otherwise), the row equals the reference: every
    special id cleared, other bits kept, EOS set only when accepting."""
    rng = np.random.default_rng(size)
    eos = [special[-1]] if len(special) else []
    bits = SpecialBits(_Vocab(size, eos=eos, special=special))
    allowed = rng.random(size) < 0.5
    for accepting in (False, True):
        row = bitmask_from_bool(allowed[None, :])[0].copy()
        bits.finish_row(row, accepting=accepting)
        want = allowed.copy()
        want[list(special)] = False
        if accepting:
            want[eos] = True
        assert np.array_equal(bitmask_to_bool(row, size), want)


def test_module_has_docstrings():
    for name in masks.__all__ if hasattr(masks, "__all__") else dir(masks):
        obj = getattr(masks, name)
        if (
            callable(obj)
            and not name.startswith("_")
            and getattr(obj, "__module__", "") == masks.__name__
        ):
            assert obj.__doc__, name


@pytest.mark.parametrize("size", [1, 31, 32, 33, 100, 128])
def test_pack_row_equals_bitmask_from_bool_and_fills_out(size):
    rng = np.random.default_rng(size)
    allowed = rng.random(size) < 0.5
    expected = ca.bitmask_from_bool(allowed)
    assert np.array_equal(ca.pack_row(allowed), expected)
    padded = np.zeros(ca.bitmask_words(size) * 32, dtype=bool)
    padded[:size] = allowed
    out = np.full(ca.bitmask_words(size) + 1, -1, dtype=np.int32)  # a wider row: cleared past
    assert ca.pack_row(padded, out) is out
    assert np.array_equal(out[:-1], expected) and out[-1] == 0


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_apply_bitmask_with_indices_clears_padded_columns(device):
    """Logits wider than the vocabulary (padded embedding rows) and a bitmask
    whose padding bits are set: with ``indices`` too, every column at or past
    the vocabulary is disallowed in the chosen rows, the others untouched."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device here")
    allowed = torch.ones(3, 64, dtype=torch.bool)  # bits 40..63 are padding for V=40
    packed = bitmask_from_bool(allowed)
    logits = torch.zeros(3, 80, device=device)
    apply_bitmask_(logits, packed, vocab_size=40, indices=[1])
    finite = torch.isfinite(logits).cpu()
    assert finite[1, :40].all() and not finite[1, 40:].any()
    assert finite[0].all() and finite[2].all()


# -- the fused kernel (constrain_api.apply_kernel): run here under Triton's
# interpreter on CPU tensors, on a GPU through apply_bitmask_ itself


@pytest.fixture
def interpreted_kernel(monkeypatch):
    """The apply kernel built by Triton's interpreter (which runs it on CPU
    tensors), rebuilt normally afterwards."""
    pytest.importorskip("triton", reason="triton is not installed here")
    from constrain_api import apply_kernel

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    apply_kernel._kernel.cache_clear()
    yield apply_kernel
    apply_kernel._kernel.cache_clear()


def _random_case(batch, vocab, width, dtype, seed):
    """Logits and a bitmask whose padding bits (past ``vocab``) are set at random."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, width, generator=gen).to(dtype)
    bits = torch.rand(batch, bitmask_words(vocab) * 32, generator=gen) < 0.5
    bits[0] = False  # a row with nothing allowed
    packed = bitmask_from_bool(bits)
    allowed = bits.clone()
    allowed[:, vocab:] = False
    return logits, packed, allowed


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    "batch,vocab,width",
    [(1, 100, 100), (3, 2100, 2100), (2, 33, 64), (2, 70, 200), (4, 1, 1030)],
)
def test_the_kernel_matches_the_bool_reference(interpreted_kernel, dtype, batch, vocab, width):
    """Every dtype, widths over several blocks, logits wider than the
    vocabulary and than the bitmask, padding bits set: ``-inf`` exactly
    where refused, the other logits untouched (bitwise)."""
    logits, packed, allowed = _random_case(batch, vocab, width, dtype, seed=vocab + width)
    expected = reference_apply(logits, allowed)
    assert interpreted_kernel.apply_(logits, packed, vocab, None) is True
    assert torch.equal(logits, expected)


def test_the_kernel_applies_only_the_rows_asked_for(interpreted_kernel):
    logits, packed, allowed = _random_case(5, 1500, 1600, torch.float32, seed=1)
    expected = logits.clone()
    for i in (4, 1):
        expected[i] = reference_apply(logits[i : i + 1], allowed[i : i + 1])[0]
    rows = torch.tensor([4, 1], dtype=torch.long)
    assert interpreted_kernel.apply_(logits, packed, 1500, rows) is True
    assert torch.equal(logits, expected)


def test_a_kernel_that_cannot_build_warns_once_and_writes_nothing(monkeypatch):
    """A GPU the kernel cannot be built for: ``apply_`` returns False after a
    RuntimeWarning, and the process keeps the torch path (``usable`` says no)."""
    from constrain_api import apply_kernel

    class Refusing:
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                raise RuntimeError("no compiler for this GPU")

            return launch

    monkeypatch.setattr(apply_kernel, "_kernel", lambda: Refusing())
    monkeypatch.setattr(apply_kernel, "_broken", [])
    logits, packed, _ = _random_case(2, 64, 64, torch.float32, seed=2)
    before = logits.clone()
    with pytest.warns(RuntimeWarning, match="torch path"):
        assert apply_kernel.apply_(logits, packed, 64, None) is False
    assert torch.equal(logits, before)
    assert apply_kernel._broken and "no compiler" in apply_kernel._broken[0]


def test_cpu_logits_never_take_the_kernel(monkeypatch):
    from constrain_api import apply_kernel

    def refuse(*args):
        raise AssertionError("the kernel was called for CPU logits")

    monkeypatch.setattr(apply_kernel, "apply_", refuse)
    logits, packed, allowed = _random_case(2, 40, 40, torch.float32, seed=3)
    expected = reference_apply(logits, allowed)
    apply_bitmask_(logits, packed, vocab_size=40)
    assert torch.equal(logits, expected)
    assert not apply_kernel.usable(logits)


def test_apply_bitmask_refuses_indices_outside_the_rows():
    logits, packed, _ = _random_case(2, 40, 40, torch.float32, seed=4)
    for bad in ([2], [-1]):
        with pytest.raises(IndexError, match="outside the 2 rows"):
            apply_bitmask_(logits, packed, vocab_size=40, indices=bad)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
@pytest.mark.parametrize("path", ["kernel", "torch"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_apply_bitmask_on_cuda_matches_the_reference(monkeypatch, path, dtype):
    """Both CUDA paths (the fused kernel where triton is importable, and
    ``CONSTRAIN_APPLY=torch``), all rows and some, against the reference."""
    from constrain_api import apply_kernel

    if path == "torch":
        monkeypatch.setenv(apply_kernel.ENV_VAR, "torch")
    logits, packed, allowed = _random_case(16, 128256, 128384, dtype, seed=5)
    expected = reference_apply(logits, allowed)
    gpu = logits.cuda()
    if path == "kernel":
        assert apply_kernel.usable(gpu) == apply_kernel._importable()
    apply_bitmask_(gpu, packed, vocab_size=128256)
    assert torch.equal(gpu.cpu(), expected)
    some = logits.cuda()
    apply_bitmask_(some, packed, vocab_size=128256, indices=[3, 0])
    want = logits.clone()
    want[[3, 0]] = expected[[3, 0]]
    assert torch.equal(some.cpu(), want)
