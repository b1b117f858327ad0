"""The models the loop drives: ``HFCausalLM``/``tiny_model`` keep the cache-slot
attention contract of ``CausalLM``, and ``ScriptedLM`` wants its target.

``CONSTRAIN_TEST_DEVICE=cuda`` runs the model tests on a GPU.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import torch
from constrain_conformance.corpus import small_vocabulary
from transformers import LlamaForCausalLM

from constrain_api.decoding import CausalLM, HFCausalLM, ScriptedLM, from_pretrained, tiny_model

DEVICE = os.environ.get("CONSTRAIN_TEST_DEVICE", "cpu")
TOL = {"atol": 1e-4, "rtol": 1e-4}


@pytest.fixture(scope="module")
def vocab():
    return small_vocabulary()


@pytest.fixture(scope="module")
def model(vocab):
    return tiny_model(vocab, seed=0, device=DEVICE)


def _run(model, ids, attention, positions, cache=None):
    """One ``forward`` with plain nested lists, on the model's device."""

    def t(x):
        return torch.tensor(x, device=model.device)

    return model.forward(t(ids), t(attention), t(positions), cache)


def _full(model, ids):
    """Logits of one unpadded row in a single pass, no cache."""
    logits, _ = _run(model, [ids], [[1] * len(ids)], [list(range(len(ids)))])
    return logits[0]


# -- HFCausalLM / tiny_model -----------------------------------------------------------
def test_tiny_model_is_padded_and_seeded(vocab, model):
    assert isinstance(model, CausalLM) and isinstance(model, HFCausalLM)
    assert model.width % 64 == 0 and model.width > vocab.size  # 400 -> 448 rows
    assert model.width == model.model.config.vocab_size
    assert model.device.type == torch.device(DEVICE).type
    same = tiny_model(vocab, seed=0, device=DEVICE)
    other = tiny_model(vocab, seed=1, device=DEVICE)
    ids = [5, 6, 7]
    logits = _full(model, ids)
    assert logits.shape == (3, model.width) and logits.dtype == torch.float32
    assert torch.equal(logits, _full(same, ids))
    assert not torch.allclose(logits, _full(other, ids))


def test_global_rng_is_untouched(vocab):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    tiny_model(vocab, seed=9, device="cpu")
    assert torch.equal(torch.rand(3), expected)


def test_a_random_model_has_the_published_shapes():
    """``random_model(vocab, "llama-3.2-1b")`` costs what Llama-3.2-1B costs:
    with the Llama-3 vocabulary's size it has the published model's
    1,235,814,400 weights besides its own head (a matrix of its own, not the
    embedding tied). Built on the meta device: shapes, no memory."""
    from types import SimpleNamespace

    from constrain_api.decoding import MODEL_SHAPES, random_model

    llama3 = SimpleNamespace(size=128_256, eos_id=128_001)
    lm = random_model(llama3, "llama-3.2-1b", device="meta")
    weights = sum(p.numel() for p in lm.model.parameters())
    head = lm.model.lm_head.weight.numel()
    assert lm.width == 128_256 and head == 128_256 * 2048
    assert weights - head == 1_235_814_400
    assert lm.model.config.num_key_value_heads == 8 and lm.model.dtype == torch.float32
    assert set(MODEL_SHAPES) >= {"llama-3.2-1b", "llama-3.1-8b"}
    with pytest.raises(KeyError, match=r"llama-3\.2-1b"):
        random_model(llama3, "gpt-5")


def test_width_can_be_narrowed_but_not_widened(model):
    narrow = HFCausalLM(model.model, width=400)
    logits = _full(narrow, [5, 6])
    assert narrow.width == 400 and logits.shape == (2, 400)
    torch.testing.assert_close(logits, _full(model, [5, 6])[:, :400])
    with pytest.raises(ValueError, match="width"):
        HFCausalLM(model.model, width=model.width + 1)


def test_incremental_decoding_matches_one_pass(model):
    full = _full(model, [5, 6, 7, 8, 9])
    logits, cache = _run(model, [[5, 6]], [[1, 1]], [[0, 1]])
    torch.testing.assert_close(logits[0], full[:2], **TOL)
    for slot, token in enumerate([7, 8, 9], start=2):
        logits, cache = _run(model, [[token]], [[1] * (slot + 1)], [[slot]], cache)
        torch.testing.assert_close(logits[0, -1], full[slot], **TOL)


def test_padding_slots_in_the_cache_are_ignored(model):
    # [5, 6, PAD] then [7, 8, 9]: the pad slot stays masked out, positions skip it.
    full = _full(model, [5, 6, 7, 8, 9])
    first, cache = _run(model, [[5, 6, 0]], [[1, 1, 0]], [[0, 1, 1]])
    second, cache = _run(model, [[7, 8, 9]], [[1, 1, 0, 1, 1, 1]], [[2, 3, 4]], cache)
    torch.testing.assert_close(first[0, :2], full[:2], **TOL)
    torch.testing.assert_close(second[0], full[2:], **TOL)


def test_rows_padded_differently_in_one_batch_match_each_row_alone(model):
    # All three rows hold the text [5, 6, 7, 8]; padding (token 3) sits at the
    # start, in the middle and at the end of the first chunk, and in the second.
    ids = [[3, 5, 6], [5, 3, 6], [5, 6, 3]]
    attention = [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
    positions = [[0, 0, 1], [0, 1, 1], [0, 1, 2]]
    _, cache = _run(model, ids, attention, positions)
    ids2 = [[7, 8], [3, 7], [7, 8]]
    attention2 = [a + b for a, b in zip(attention, [[1, 1], [0, 1], [1, 1]], strict=True)]
    positions2 = [[2, 3], [2, 2], [2, 3]]
    logits, cache = _run(model, ids2, attention2, positions2, cache)
    full = _full(model, [5, 6, 7, 8])
    torch.testing.assert_close(logits[0, 1], full[3], **TOL)
    torch.testing.assert_close(logits[1, 1], full[2], **TOL)  # row 1 has not seen 8 yet
    torch.testing.assert_close(logits[2, 1], full[3], **TOL)
    # A third call: every row now continues after its own slots.
    ids3 = [[9], [8], [9]]
    attention3 = [[*a, 1] for a in attention2]
    logits, _ = _run(model, ids3, attention3, [[4], [3], [4]], cache)
    ref = _full(model, [5, 6, 7, 8, 9])
    assert torch.isfinite(logits).all()
    torch.testing.assert_close(logits[0, 0], ref[4], **TOL)
    torch.testing.assert_close(logits[1, 0], ref[3], **TOL)
    torch.testing.assert_close(logits[2, 0], ref[4], **TOL)


class _OlderLlama(LlamaForCausalLM):
    """A model whose ``forward`` takes the cache as ``past_key_values`` and
    has no ``logits_to_keep`` (older transformers; custom models)."""

    def forward(self, input_ids, attention_mask, position_ids, past_key_values, use_cache):
        self.calls += 1
        return super().forward(input_ids=input_ids, attention_mask=attention_mask,
                               position_ids=position_ids, cache=past_key_values,
                               use_cache=use_cache)  # fmt: skip


@pytest.fixture(scope="module")
def older(model):
    inner = _OlderLlama(model.model.config).to(DEVICE)
    inner.load_state_dict(model.model.state_dict())
    inner.calls = 0
    return HFCausalLM(inner)


@pytest.mark.parametrize("kind", ["logits_to_keep", "older"])
def test_kept_positions_are_the_full_passes_logits(model, older, kind):
    """``keep`` gives the logits of those positions only, the full pass's
    (to rounding: the head's product has another shape), whether the model
    computes only those (``logits_to_keep``) or the wrapper drops the
    others; the cache goes on the same either way."""
    lm = model if kind == "logits_to_keep" else older
    assert lm.keeps_positions
    ids, attention = [[5, 6, 7, 0], [8, 9, 10, 11]], [[1, 1, 1, 0], [1, 1, 1, 1]]
    positions = [[0, 1, 2, 2], [0, 1, 2, 3]]
    full, _ = _run(model, ids, attention, positions)
    for keep in ([3], [2, 3], [0, 2]):
        kept, cache = lm.forward(*(torch.tensor(x, device=lm.device) for x in
                                   (ids, attention, positions)), None,
                                 keep=torch.tensor(keep, device=lm.device))  # fmt: skip
        assert kept.shape == (2, len(keep), model.width) and kept.dtype == torch.float32
        torch.testing.assert_close(kept, full[:, keep], **TOL)
    after, _ = _run(lm, [[12], [12]], [[*a, 1] for a in attention], [[3], [4]], cache)
    torch.testing.assert_close(after[0, 0], _full(model, [5, 6, 7, 12])[-1], **TOL)
    torch.testing.assert_close(after[1, 0], _full(model, [8, 9, 10, 11, 12])[-1], **TOL)
    if lm is older:
        assert older.model.calls >= 4  # its own forward ran, with past_key_values


def test_the_wrapper_uses_no_deprecated_transformers_argument(model):
    """transformers 5.24 renamed ``past_key_values`` (its removal announced
    for 5.40): the wrapper passes the cache under the name ``forward`` takes."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        _, cache = _run(model, [[5, 6]], [[1, 1]], [[0, 1]])
        _run(model, [[7]], [[1, 1, 1]], [[2]], cache)


def test_select_rows_with_repeats(model):
    _, cache = _run(model, [[5, 6], [7, 8]], [[1, 1], [1, 1]], [[0, 1], [0, 1]])
    cache = model.select_rows(cache, torch.tensor([1, 1, 0], device=model.device))
    logits, _ = _run(model, [[9], [10], [11]], [[1, 1, 1]] * 3, [[2], [2], [2]], cache)
    torch.testing.assert_close(logits[0, 0], _full(model, [7, 8, 9])[-1], **TOL)
    torch.testing.assert_close(logits[1, 0], _full(model, [7, 8, 10])[-1], **TOL)
    torch.testing.assert_close(logits[2, 0], _full(model, [5, 6, 11])[-1], **TOL)


def test_from_pretrained_loads_a_saved_model(model, tmp_path):
    model.model.save_pretrained(tmp_path)
    loaded = from_pretrained(tmp_path, device=DEVICE)
    assert isinstance(loaded, HFCausalLM) and loaded.width == model.width
    assert not loaded.model.training
    torch.testing.assert_close(_full(loaded, [1, 2, 3]), _full(model, [1, 2, 3]))


# -- ScriptedLM ------------------------------------------------------------------------
def _prompt(lm, rows=1, prompt=(1, 2)):
    n = len(prompt)
    ids = torch.tensor([list(prompt)] * rows)
    return lm.forward(
        ids, torch.ones(rows, n, dtype=torch.long), torch.arange(n).repeat(rows, 1), None
    )


def _step(lm, cache, rows_tokens, slots):
    ids = torch.tensor([[t] for t in rows_tokens])
    attn = torch.ones(len(rows_tokens), slots + 1, dtype=torch.long)
    logits, cache = lm.forward(ids, attn, torch.full((len(rows_tokens), 1), slots), cache)
    return logits[:, -1], cache


def test_scripted_lm_follows_its_target_then_eos():
    lm = ScriptedLM([3, 4, 5], width=10, eos_id=9)
    assert isinstance(lm, CausalLM)
    logits, cache = _prompt(lm)
    assert logits.shape == (1, 2, 10) and logits.dtype == torch.float32
    assert logits[0, -1].argmax() == 3 and logits[0, -1, 3] == 10.0
    for slot, (fed, wanted) in enumerate([(3, 4), (4, 5), (5, 9)], start=2):
        last, cache = _step(lm, cache, [fed], slot)
        assert last[0].argmax() == wanted
    last, cache = _step(lm, cache, [9], 5)  # past the target and its EOS: nothing wanted
    assert torch.all(last == 0)


def test_scripted_lm_stops_preferring_after_divergence():
    lm = ScriptedLM([3, 4, 5], width=10, eos_id=9)
    _, cache = _prompt(lm)
    last, cache = _step(lm, cache, [7], 2)  # not the target's 3
    assert torch.all(last == 0)
    last, cache = _step(lm, cache, [4], 3)  # back on a target token, but the prefix differs
    assert torch.all(last == 0)


def test_scripted_lm_ignores_padding_slots_and_reads_chunks():
    lm = ScriptedLM([3, 4, 5], width=10, eos_id=9)
    _, cache = _prompt(lm)
    # [3, PAD, 4] in one chunk: the pad (attention 0) is not generated text.
    logits, cache = lm.forward(
        torch.tensor([[3, 7, 4]]), torch.tensor([[1, 1, 1, 0, 1]]), torch.tensor([[2, 3, 3]]), cache
    )
    assert logits[0, 0].argmax() == 4  # after 3
    assert logits[0, 2].argmax() == 5  # after 3, 4: the 7 was padding


def test_scripted_lm_forgets_slots_masked_out_later():
    """A rejected speculative draft token stays in the cache, masked out by the
    loop from then on: the model's output so far no longer holds it."""
    lm = ScriptedLM([3, 4, 5], width=10, eos_id=9)
    _, cache = _prompt(lm)
    # pending 3 with a wrong draft token 7: after 3 it wants 4, after 7 nothing
    logits, cache = lm.forward(
        torch.tensor([[3, 7]]), torch.tensor([[1, 1, 1, 1]]), torch.tensor([[2, 3]]), cache
    )
    assert logits[0, 0].argmax() == 4 and torch.all(logits[0, 1] == 0)
    # the loop rejects 7 (its slot masked out) and feeds 4 instead
    logits, cache = lm.forward(
        torch.tensor([[4]]), torch.tensor([[1, 1, 1, 0, 1]]), torch.tensor([[3]]), cache
    )
    assert logits[0, 0].argmax() == 5


def test_scripted_lm_prompt_length_separates_a_draft_fed_with_the_prompt():
    lm = ScriptedLM([3, 4, 5], width=10, eos_id=9, prompt_length=2)
    logits, _ = lm.forward(
        torch.tensor([[1, 1, 3, 4]]),
        torch.ones(1, 4, dtype=torch.long),
        torch.arange(4)[None],
        None,
    )
    assert logits[0].argmax(-1).tolist() == [3, 3, 4, 5]


def test_scripted_lm_rows_follow_targets_prompt_by_prompt():
    lm = ScriptedLM([[3], [4]], width=10, eos_id=9)
    logits, cache = _prompt(lm, rows=4)
    assert logits[:, -1].argmax(-1).tolist() == [3, 3, 4, 4]
    last, _ = _step(lm, cache, [3, 4, 4, 3], 2)
    assert last.argmax(-1).tolist() == [9, 0, 9, 0]  # EOS after each own target only
    assert torch.all(last[[1, 3]] == 0)
    for rows in (1, 3):
        with pytest.raises(ValueError, match="cannot be split"):
            _prompt(lm, rows=rows)


def test_scripted_lm_accepts_one_flat_target_of_any_integers():
    flat = ScriptedLM(np.array([3, 4]), width=10, eos_id=9)
    nested = ScriptedLM([[3, 4]], width=10, eos_id=9)
    assert flat.targets == nested.targets == [(3, 4)]


def test_scripted_lm_select_rows_copies_state():
    lm = ScriptedLM([3, 4], width=10, eos_id=9)
    _, cache = _prompt(lm)
    cache = lm.select_rows(cache, torch.tensor([0, 0]))
    last, cache = _step(lm, cache, [3, 8], 2)
    assert last[0].argmax() == 4  # on the target
    assert torch.all(last[1] == 0)  # the copy diverged alone
    cache = lm.select_rows(cache, torch.tensor([1, 0]))
    last, _ = _step(lm, cache, [4, 4], 3)
    assert torch.all(last[0] == 0) and last[1].argmax() == 9  # reordered with their state


def test_scripted_lm_noise_is_seeded():
    def run(seed, noise=1.0):
        lm = ScriptedLM([3, 4], width=10, eos_id=9, noise=noise, seed=seed)
        first, cache = _prompt(lm)
        second, _ = _step(lm, cache, [3], 2)
        return torch.cat([first[0], second])

    assert torch.equal(run(0), run(0))
    assert not torch.equal(run(0), run(1))
    assert torch.equal(run(0, noise=0.0), run(1, noise=0.0))
    assert run(0)[-1].argmax() == 4  # strength 10 dominates unit noise
    noisy = run(0)
    noisy[:, [3, 4]] = 0
    assert noisy.std() > 0.5


def test_scripted_lm_rejects_ids_outside_width():
    with pytest.raises(ValueError, match="target ids"):
        ScriptedLM([3, 12], width=10, eos_id=9)
