"""``ConstrainedLogitsProcessor``: any backend inside ``transformers``' own ``generate``.

``model.generate(..., logits_processor=[ConstrainedLogitsProcessor(compiled)])``
masks every step's scores with the compiled constraint. transformers calls a
processor with the whole ``input_ids`` so far and does not say how it
reordered beams, so the processor keys its checkers by the generated prefix:
each row's checker is the one that consumed the row's tokens up to the last,
forked and advanced by the last token.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import LogitsProcessor

from ..masks import SpecialBits, apply_bitmask_, bitmask_words, row_view


class ConstrainedLogitsProcessor(LogitsProcessor):
    """Mask ``scores`` with ``compiled`` (a ``Compiled`` artifact) in ``generate``.

    ``prompt_length``: where generation starts in ``input_ids`` (default: the
    length at the first call). A call whose ``input_ids`` is not one token
    longer than the last call's starts a new generation; :meth:`reset` does
    it explicitly.
    """

    def __init__(self, compiled: Any, *, prompt_length: int | None = None):
        self.compiled = compiled
        self.vocab = compiled.vocab
        self._given_prompt_length = prompt_length
        self._special_bits = SpecialBits(self.vocab)
        self._bitmask = torch.zeros((0, bitmask_words(self.vocab.size)), dtype=torch.int32)
        self.reset()

    def reset(self) -> None:
        """Forget all sequences (the next call starts a new ``generate``)."""
        self.prompt_length = self._given_prompt_length
        self._by_prefix: dict[tuple[int, ...], Any] = {}
        self._done: set[tuple[int, ...]] = set()
        self._last_length: int | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        length = input_ids.shape[1]
        if self._last_length is not None and length != self._last_length + 1:
            self.reset()  # within one generate call, every call adds one token
        if self.prompt_length is None:
            self.prompt_length = length
        self._last_length = length
        generated = input_ids[:, self.prompt_length :].tolist()
        seen: dict[tuple[int, ...], Any] = {}
        done: set[tuple[int, ...]] = set()
        checkers = []
        for row in generated:
            key = tuple(row)
            if key not in seen:
                seen[key] = self._checker_for(key, done)
            checkers.append(seen[key])
        self._by_prefix, self._done = seen, done
        if self._bitmask.shape[0] < len(checkers):
            self._bitmask = torch.zeros((len(checkers), self._bitmask.shape[1]), dtype=torch.int32)
        bitmask = self._bitmask[: len(checkers)]
        self.compiled.fill_masks(checkers, bitmask)
        for i, row in enumerate(generated):
            if tuple(row) in self._done:
                # A finished row: transformers ignores its tokens, but an empty
                # mask would make sampling's softmax NaN; let it pick EOS.
                self._special_bits.finish_row(row_view(bitmask, i), accepting=True)
        return apply_bitmask_(scores, bitmask, vocab_size=self.vocab.size)

    def _checker_for(self, key: tuple[int, ...], done: set[tuple[int, ...]]) -> Any:
        if not key:
            return self.compiled.checker()
        parent = self._by_prefix.get(key[:-1])
        if parent is None:
            raise RuntimeError(
                "generated tokens this processor never masked: call reset() between generations"
            )
        checker = parent.fork()
        if key[:-1] in self._done or key[-1] in self.vocab.eos_ids:
            # Finished: transformers keeps feeding pad tokens; the mask is ignored.
            done.add(key)
        else:
            checker.update([key[-1]])  # TokenRejected: something bypassed the mask
        return checker
