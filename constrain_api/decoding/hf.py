"""``transformers`` causal LMs as the loop's ``CausalLM``; ``tiny_model`` and
``random_model`` (random weights, a published model's shapes).

``HFCausalLM`` passes the loop's attention mask over cache slots and its
position ids straight to the model, so right padding and masked-out draft
slots are handled by the model's own masking (the same mechanism as left
padding in ``transformers``' ``generate``).
"""

from __future__ import annotations

import inspect
import os
from typing import Any, NamedTuple

import torch
from transformers import AutoModelForCausalLM, DynamicCache, LlamaConfig, LlamaForCausalLM


class HFCausalLM:
    """Wraps a ``transformers`` causal LM (``model``, kept as ``.model``).

    ``width`` defaults to the rows of its output embedding (its logits per
    position); a smaller ``width`` drops the last columns. ``device`` is
    where the logits come out (the output embedding's device).

    It keeps positions (``keeps_positions``): the model's head runs only on
    the positions asked for where its ``forward`` takes ``logits_to_keep``
    (as transformers' causal LMs do), else the other positions' logits are
    dropped before their float copy. The cache goes in under the name the model's
    ``forward`` takes (``cache`` since transformers 5.24, else
    ``past_key_values``).
    """

    keeps_positions = True

    def __init__(self, model: Any, *, width: int | None = None):
        self.model = model.eval()
        head = model.get_output_embeddings()
        rows = getattr(head, "out_features", None)
        if rows is None:
            rows = model.config.get_text_config().vocab_size
        if width is not None and not 0 < width <= rows:
            raise ValueError(f"width must lie in [1, {rows}], got {width}")
        self.width = int(width if width is not None else rows)
        weight = getattr(head, "weight", None)
        self.device = weight.device if weight is not None else model.device
        takes = inspect.signature(model.forward).parameters
        self._cache_name = "cache" if "cache" in takes else "past_key_values"
        self._keeps = "logits_to_keep" in takes

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        cache: Any | None,
        keep: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """One forward pass after the cached slots (see ``CausalLM.forward``);
        with ``keep``, the logits at those positions only."""
        if cache is None:
            cache = DynamicCache(config=self.model.config)
        options: dict[str, Any] = {self._cache_name: cache}
        if keep is not None and self._keeps:
            options["logits_to_keep"] = keep
        with torch.inference_mode():
            out = self.model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=position_ids,
                use_cache=True,
                **options,
            )
        logits = out.logits
        if keep is not None and not self._keeps:
            logits = logits[:, keep]
        cache = getattr(out, "cache", None)
        if cache is None:
            cache = out.past_key_values
        return logits[..., : self.width].float(), cache

    def select_rows(self, cache: Any, rows: torch.Tensor) -> Any:
        """Keep ``rows`` of the cache, in that order (repeats allowed)."""
        with torch.inference_mode():
            cache.reorder_cache(rows.to(self.device))
        return cache

    def drop_slots(self, cache: Any, count: int) -> Any:
        """The cache without its last ``count`` slots (``crop`` with a
        negative count: how many to remove, in transformers 4 and 5)."""
        cache.crop(-count)
        return cache


def _default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def tiny_model(
    vocab: Any,
    *,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 4,
    seed: int = 0,
    device: str | torch.device | None = None,
    dtype: torch.dtype = torch.float32,
) -> HFCausalLM:
    """A random-weight Llama sized to ``vocab``: the embedded default model.

    The embedding has ``vocab.size`` rows rounded up to a multiple of 64, as
    real models pad theirs; the loop never picks the padding rows. Weights
    depend only on ``seed`` (the global RNG is left untouched).
    """
    shape = ModelShape(hidden_size, hidden_size * 2, layers, heads, heads)
    return _random_llama(vocab, shape, seed, device, dtype)


class ModelShape(NamedTuple):
    """A Llama's sizes: what its forward pass costs, not what it knows."""

    hidden_size: int
    intermediate_size: int
    layers: int
    heads: int
    kv_heads: int


#: Published models' shapes (their ``config.json``), for :func:`random_model`.
MODEL_SHAPES: dict[str, ModelShape] = {
    "llama-3.2-1b": ModelShape(2048, 8192, 16, 32, 8),
    "llama-3.2-3b": ModelShape(3072, 8192, 28, 24, 8),
    "llama-3.1-8b": ModelShape(4096, 14336, 32, 32, 8),
}


def random_model(
    vocab: Any,
    shape: str,
    *,
    seed: int = 0,
    device: str | torch.device | None = None,
    dtype: torch.dtype | None = None,
) -> HFCausalLM:
    """A random-weight Llama with a published model's shapes (``shape``, a
    key of :data:`MODEL_SHAPES`) and ``vocab``'s size: a forward pass costs
    what the real model's does, so the loop's overhead can be measured
    against it without downloading weights. Built on ``device`` (CUDA when
    present), in ``dtype`` (bfloat16 on CUDA, float32 on CPU, by default);
    the head is its own matrix (as in ``tiny_model``), not tied to the
    embedding. ``KeyError`` names the known shapes."""
    if shape not in MODEL_SHAPES:
        raise KeyError(f"unknown model shape {shape!r}: one of {', '.join(MODEL_SHAPES)}")
    device = torch.device(device) if device is not None else _default_device()
    if dtype is None:
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    return _random_llama(vocab, MODEL_SHAPES[shape], seed, device, dtype)


def _random_llama(
    vocab: Any,
    shape: ModelShape,
    seed: int,
    device: str | torch.device | None,
    dtype: torch.dtype,
) -> HFCausalLM:
    width = -(-vocab.size // 64) * 64
    config = LlamaConfig(
        vocab_size=width,
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        max_position_embeddings=4096,
        eos_token_id=vocab.eos_id,
        tie_word_embeddings=False,
        # Like eager, sdpa gives padded rows (holes in the 2-D mask, fully masked
        # pad queries) the logits of unpadded ones, on CPU and CUDA; and is faster.
        attn_implementation="sdpa",
    )
    device = torch.device(device) if device is not None else _default_device()
    # made where it runs (a billion weights initialized on the GPU, not copied
    # there), from a seed, leaving the global generators as they were
    forked = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=forked), torch.device(device):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    # Random init gives near-uniform logits; sharpen them so a random model has
    # preferences (long runs, repetitions), as trained models do.
    with torch.no_grad():
        model.lm_head.weight.mul_(8.0)
    return HFCausalLM(model.to(dtype=dtype))


def from_pretrained(
    name_or_path: str | os.PathLike[str],
    *,
    device: str | torch.device | None = None,
    width: int | None = None,
    **kwargs: Any,
) -> HFCausalLM:
    """Load a causal LM with ``AutoModelForCausalLM.from_pretrained`` (a local
    folder or a hub name) and wrap it; ``kwargs`` go to ``from_pretrained``.

    ``device``: where to move the loaded model (needs no ``accelerate``,
    unlike ``device_map=``); by default it stays where ``from_pretrained``
    put it.
    """
    model = AutoModelForCausalLM.from_pretrained(name_or_path, **kwargs)
    if device is not None:
        model = model.to(device)
    return HFCausalLM(model, width=width)
