"""A ``Vocabulary`` as llguidance's ``LLTokenizer``: the exact token bytes,
built once per vocabulary by the backend's compiler."""

from __future__ import annotations

from typing import Any

import llguidance

from constrain_api import Vocabulary


class _WrappedVocabulary:
    """What ``llguidance.TokenizerWrapper`` reads: token bytes (special tokens
    as ``0xFF`` + name, llguidance's marking), EOS, and the vocabulary's own
    encoder, which llguidance calls only to tokenize forced text — turned off
    by ``no_forcing`` — so it never decides a mask."""

    def __init__(self, vocab: Vocabulary):
        self.eos_token_id = vocab.eos_id if vocab.eos_ids else None
        self.bos_token_id = None
        self.special_token_ids = sorted(vocab.special_ids)
        self.tokens = [
            b"\xff" + vocab.token_name(i).encode() if vocab.is_special(i) else vocab.token_bytes(i)
            for i in range(vocab.size)
        ]
        self._vocab = vocab

    def __call__(self, text: str | bytes) -> list[int]:
        if not self._vocab.has_encoder:
            raise RuntimeError(f"vocabulary {self._vocab.name!r} has no encoder")
        return self._vocab.encode(text if isinstance(text, str) else text.decode(), check=False)


def llguidance_tokenizer(vocab: Vocabulary) -> Any:
    """An ``LLTokenizer`` over the vocabulary's exact bytes."""
    return llguidance.LLTokenizer(
        llguidance.TokenizerWrapper(_WrappedVocabulary(vocab)),
        n_vocab=vocab.size,
        eos_token=sorted(vocab.eos_ids) or None,
    )
