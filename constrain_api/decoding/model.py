"""The minimal model protocol the decoding loop drives: token ids in, logits out, with a KV cache.

The loop feeds each row a chunk of new tokens per call. Rows advance by
different amounts (forced tokens, speculative drafts, right padding), so
instead of per-row cache lengths the loop keeps one attention mask over every
cache slot: slot ``j`` of row ``b`` is attended iff ``attention_mask[b, j]``
is 1. Padding and rejected draft tokens stay in the cache, masked out forever
(trailing slots that every row gave up are dropped where the model can:
:func:`drop_slots`).
``position_ids`` count only the attended tokens before a slot, so a row's
positions are what they would be without the padding.

The loop reads the logits of few positions per pass (a row's last token,
and each draft token): a model that sets ``keeps_positions = True`` takes
``keep=`` in ``forward`` and computes only those, so a long prompt costs no
logits-sized tensor per token (``transformers``' ``logits_to_keep``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    import torch


@runtime_checkable
class CausalLM(Protocol):
    """A causal language model as the decoding loop sees it.

    ``width``: logits per position; at least the vocabulary size (a model
    may pad its embedding matrix; the loop never allows ids at or above the
    vocabulary's size). ``device``: where logits live and masks are applied.
    """

    width: int
    device: torch.device

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        cache: Any | None,
    ) -> tuple[torch.Tensor, Any]:
        """Run ``input_ids`` (``[B, T]`` long) after the cached slots.

        ``attention_mask`` is ``[B, S + T]`` (``S`` cached slots, then the
        ``T`` new ones; 1 = attend); ``position_ids`` is ``[B, T]``;
        ``cache`` is ``None`` on the first call, else what the previous call
        returned. Returns float logits ``[B, T, width]`` (the prediction after
        each new slot) and the cache, now holding ``S + T`` slots.

        Optional: where the model sets ``keeps_positions = True``, the loop
        passes ``keep`` (a 1-D long tensor on ``device``, ascending
        positions among the ``T`` new ones) and the logits are
        ``[B, len(keep), width]``, those positions' only.
        """

    def select_rows(self, cache: Any, rows: torch.Tensor) -> Any:
        """The cache restricted to ``rows`` (a 1-D long tensor, repeats allowed),
        in that order: drops finished rows and reorders beams."""


def drop_slots(model: CausalLM, cache: Any, count: int) -> Any | None:
    """The cache without its last ``count`` slots (every row), or ``None``
    when ``model`` cannot drop them: a model may define
    ``drop_slots(cache, count)`` (optional; without it, slots the loop gave
    up stay in the cache, masked out)."""
    drop = getattr(model, "drop_slots", None)
    return None if drop is None else drop(cache, count)
