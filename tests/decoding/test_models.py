"""The models the loop drives: ``HFCausalLM``/``tiny_model`` keep the cache-slot
attention contract of ``CausalLM``, and ``ScriptedLM`` wants its target."""

from __future__ import annotations

import pytest
import torch
from constrain_conformance.corpus import small_vocabulary

from constrain_api.decoding import CausalLM, HFCausalLM, ScriptedLM, from_pretrained, tiny_model


@pytest.fixture(scope="module")
def vocab():
    return small_vocabulary()


@pytest.fixture(scope="module")
def model(vocab):
    return tiny_model(vocab, seed=0, device="cpu")


def _full(model, ids):
    ids = torch.tensor([ids])
    n = ids.shape[1]
    logits, _ = model.forward(ids, torch.ones(1, n, dtype=torch.long), torch.arange(n)[None], None)
    return logits[0]


def test_tiny_model_is_padded_and_seeded(vocab, model):
    assert isinstance(model, CausalLM)
    assert model.width % 64 == 0 and model.width >= vocab.size
    same = tiny_model(vocab, seed=0, device="cpu")
    other = tiny_model(vocab, seed=1, device="cpu")
    ids = [5, 6, 7]
    assert torch.equal(_full(model, ids), _full(same, ids))
    assert not torch.allclose(_full(model, ids), _full(other, ids))


def test_global_rng_is_untouched(vocab):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    tiny_model(vocab, seed=9, device="cpu")
    assert torch.equal(torch.rand(3), expected)


def test_incremental_decoding_with_padding_slots_matches_one_pass(model):
    full = _full(model, [5, 6, 7, 8, 9])
    # [5, 6, PAD] then [7, 8, 9]: the pad slot is masked out, positions skip it.
    first, cache = model.forward(
        torch.tensor([[5, 6, 0]]), torch.tensor([[1, 1, 0]]), torch.tensor([[0, 1, 1]]), None
    )
    second, cache = model.forward(
        torch.tensor([[7, 8, 9]]),
        torch.tensor([[1, 1, 0, 1, 1, 1]]),
        torch.tensor([[2, 3, 4]]),
        cache,
    )
    torch.testing.assert_close(first[0, :2], full[:2], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(second[0], full[2:], atol=1e-4, rtol=1e-4)


def test_select_rows_with_repeats(model):
    ids = torch.tensor([[5, 6], [7, 8]])
    ones = torch.ones(2, 2, dtype=torch.long)
    _, cache = model.forward(ids, ones, torch.tensor([[0, 1], [0, 1]]), None)
    cache = model.select_rows(cache, torch.tensor([1, 1, 0]))
    logits, _ = model.forward(
        torch.tensor([[9], [10], [11]]),
        torch.ones(3, 3, dtype=torch.long),
        torch.tensor([[2], [2], [2]]),
        cache,
    )
    torch.testing.assert_close(logits[0, 0], _full(model, [7, 8, 9])[-1], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(logits[1, 0], _full(model, [7, 8, 10])[-1], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(logits[2, 0], _full(model, [5, 6, 11])[-1], atol=1e-4, rtol=1e-4)


def test_from_pretrained_loads_a_saved_model(model, tmp_path):
    model.model.save_pretrained(tmp_path)
    loaded = from_pretrained(tmp_path)
    assert isinstance(loaded, HFCausalLM) and loaded.width == model.width
    torch.testing.assert_close(_full(loaded, [1, 2, 3]), _full(model, [1, 2, 3]))


# -- ScriptedLM ------------------------------------------------------------------------
def _step(lm, cache, rows_tokens, slots):
    ids = torch.tensor([[t] for t in rows_tokens])
    attn = torch.ones(len(rows_tokens), slots + 1, dtype=torch.long)
    logits, cache = lm.forward(ids, attn, torch.full((len(rows_tokens), 1), slots), cache)
    return logits[:, -1], cache


def test_scripted_lm_follows_its_target_then_eos():
    lm = ScriptedLM([3, 4, 5], width=10, eos_id=9)
    logits, cache = lm.forward(
        torch.tensor([[1, 2]]), torch.ones(1, 2, dtype=torch.long), torch.tensor([[0, 1]]), None
    )
    assert logits[0, -1].argmax() == 3
    for slot, (fed, wanted) in enumerate([(3, 4), (4, 5), (5, 9)], start=2):
        last, cache = _step(lm, cache, [fed], slot)
        assert last[0].argmax() == wanted


def test_scripted_lm_stops_preferring_after_divergence():
    lm = ScriptedLM([3, 4, 5], width=10, eos_id=9)
    _, cache = lm.forward(torch.tensor([[1]]), torch.ones(1, 1, dtype=torch.long), None, None)
    last, cache = _step(lm, cache, [7], 1)  # not the target's 3
    assert torch.all(last == 0)


def test_scripted_lm_rows_follow_targets_prompt_by_prompt():
    lm = ScriptedLM([[3], [4]], width=10, eos_id=9)
    logits, _ = lm.forward(
        torch.tensor([[1], [1], [1], [1]]), torch.ones(4, 1, dtype=torch.long), None, None
    )
    assert logits[:, -1].argmax(-1).tolist() == [3, 3, 4, 4]
    with pytest.raises(ValueError, match="cannot be split"):
        lm.forward(torch.tensor([[1]] * 3), torch.ones(3, 1, dtype=torch.long), None, None)


def test_scripted_lm_select_rows_copies_state():
    lm = ScriptedLM([3, 4], width=10, eos_id=9)
    _, cache = lm.forward(torch.tensor([[1]]), torch.ones(1, 1, dtype=torch.long), None, None)
    cache = lm.select_rows(cache, torch.tensor([0, 0]))
    last, cache = _step(lm, cache, [3, 8], 1)
    assert last[0].argmax() == 4  # on the target
    assert torch.all(last[1] == 0)  # the copy diverged alone


def test_scripted_lm_noise_is_seeded():
    def run(seed):
        lm = ScriptedLM([3], width=10, eos_id=9, noise=1.0, seed=seed)
        logits, _ = lm.forward(torch.tensor([[1]]), torch.ones(1, 1, dtype=torch.long), None, None)
        return logits

    assert torch.equal(run(0), run(0))
    assert not torch.equal(run(0), run(1))
    assert run(0)[0, -1].argmax() == 3  # strength 10 dominates unit noise


def test_scripted_lm_rejects_ids_outside_width():
    with pytest.raises(ValueError, match="target ids"):
        ScriptedLM([3, 12], width=10, eos_id=9)
