"""``ConstrainedLogitsProcessor``: any backend inside ``transformers``' own ``generate``.

``model.generate(..., logits_processor=[ConstrainedLogitsProcessor(compiled)])``
masks every step's scores with the compiled constraint: greedy, sampling,
beam search and assisted (speculative) decoding.

transformers calls a processor with the whole ``input_ids`` so far and does
not say how it reordered beams, so the processor keys its checkers by the
generated tokens (``input_ids[row, prompt_length:]``). A row whose tokens
extend a row of the previous call by one token gets that row's checker,
forked and advanced by the new token; rows with equal tokens share one
checker, and checkers nobody extended are dropped. Any other row (assisted
decoding goes back to the last accepted draft token) is rebuilt from the
previous call's checker sharing the longest prefix: rolled back, then
advanced. Rows past an EOS (transformers pads finished rows) are done: their
checker stops before the EOS and their mask allows EOS, so sampling never
sees an all ``-inf`` row; transformers ignores their tokens anyway.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import LogitsProcessor

from ..masks import allocate_bitmask_tensor, apply_bitmask_, row_view

_Key = tuple[int, ...]  # a row's generated tokens
# (checker, how many of the key's tokens it consumed: all, or those before
# the first EOS for a done row)
_Entry = tuple[Any, int]


class ConstrainedLogitsProcessor(LogitsProcessor):
    """Mask ``scores`` with ``compiled`` (a ``Compiled`` artifact) in ``generate``.

    ``prompt_length``: where generation starts in ``input_ids`` (default: the
    length at the first call). Call :meth:`reset` before reusing the processor
    for another ``generate``. A call that cannot continue the previous ones
    (another batch size, a changed prompt, fewer tokens than the prompt, more
    than one token added, or a row that extends no row of the last call) also
    starts a new generation by itself; what it cannot tell from a continuation
    is a new prompt that is the old one plus a prefix of a generated row plus
    one token.
    """

    def __init__(self, compiled: Any, *, prompt_length: int | None = None):
        self.compiled = compiled
        self.vocab = compiled.vocab
        self._given_prompt_length = prompt_length
        self._special_bits = self.vocab.special_bits
        self._bitmask = allocate_bitmask_tensor(0, self.vocab.size)
        self.reset()

    def reset(self) -> None:
        """Forget all sequences (the next call starts a new ``generate``)."""
        self.prompt_length = self._given_prompt_length
        self._prompt: torch.Tensor | None = None
        self._last_length = -1
        self._checkers: dict[_Key, _Entry] = {}

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self._starts_generation(input_ids):
            self._start(input_ids)
        current = self._advance(input_ids)
        if current is None:
            # A row continues no row of the last call: a new generate whose
            # prompt extends the last one.
            self._start(input_ids)
            current = self._advance(input_ids)
        keys, self._checkers = current
        self._last_length = input_ids.shape[1]

        if self._bitmask.shape[0] < len(keys):
            self._bitmask = allocate_bitmask_tensor(len(keys), self.vocab.size)
        bitmask = self._bitmask[: len(keys)]
        checkers = self._checkers
        self.compiled.fill_masks([checkers[key][0] for key in keys], bitmask)
        for i, key in enumerate(keys):
            if checkers[key][1] < len(key):  # done
                self._special_bits.finish_row(row_view(bitmask, i), accepting=True)
        return apply_bitmask_(scores, bitmask, vocab_size=self.vocab.size)

    def _starts_generation(self, input_ids: torch.Tensor) -> bool:
        if self._prompt is None:
            return True
        rows, length = input_ids.shape
        if rows != self._prompt.shape[0] or length < self.prompt_length:
            return True
        if length > self._last_length + 1:
            return True  # within one generate, no call adds more than one token
        # Going back happens in assisted decoding, and when generate starts again.
        return length <= self._last_length and not torch.equal(
            input_ids[:, : self.prompt_length], self._prompt
        )

    def _start(self, input_ids: torch.Tensor) -> None:
        self.reset()
        if self.prompt_length is None:
            self.prompt_length = input_ids.shape[1]
        if input_ids.shape[1] < self.prompt_length:
            raise ValueError(
                f"input_ids has {input_ids.shape[1]} tokens, fewer than "
                f"prompt_length={self.prompt_length}"
            )
        self._prompt = input_ids[:, : self.prompt_length].clone()

    def _advance(self, input_ids: torch.Tensor) -> tuple[list[_Key], dict[_Key, _Entry]] | None:
        """Every row's key and the checkers by key; ``None`` when a row
        continues no row of the previous call."""
        keys = [tuple(row) for row in input_ids[:, self.prompt_length :].tolist()]
        previous, current = self._checkers, {}
        for key in keys:
            if key in current:
                continue
            parent = previous.get(key[:-1]) if key else None
            if parent is None:
                entry = self._rebuild(key, previous)
                if entry is None:
                    return None
            else:
                entry = self._child(key, parent)
            current[key] = entry
        return keys, current

    def _child(self, key: _Key, parent: _Entry) -> _Entry:
        checker, consumed = parent
        if consumed < len(key) - 1 or key[-1] in self.vocab.eos_ids:
            # Done: transformers pads finished rows; never advanced again, so shared.
            return checker, consumed
        checker = checker.fork()
        checker.update([key[-1]])  # TokenRejected: something bypassed the mask
        return checker, len(key)

    def _rebuild(self, key: _Key, previous: dict[_Key, _Entry]) -> _Entry | None:
        """From the previous checker sharing the longest prefix: rolled back,
        then advanced. ``None`` when no previous key shares ``key[:-1]``."""
        eos = self.vocab.eos_ids
        end = next((i for i, t in enumerate(key) if t in eos), len(key))
        base, common, continues = None, 0, not previous or not key
        for other, (checker, consumed) in previous.items():
            shared = _common_prefix(other, key)
            continues = continues or shared >= len(key) - 1
            usable = min(shared, consumed, end)
            if usable > common:
                base, common = (checker, consumed), usable
        if not continues:
            return None
        checker = None
        if base is not None:
            checker = base[0].fork()
            try:
                checker.rollback(base[1] - common)
            except ValueError:  # the backend bounds its history
                checker = None
        if checker is None:
            checker, common = self.compiled.checker(), 0
        checker.update(list(key[common:end]))  # TokenRejected: something bypassed the mask
        return checker, end


def _common_prefix(a: _Key, b: _Key) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
