"""Prompt lookup: draft tokens read from the sequence itself.

Text a model writes often repeats what came before it (a key of the prompt's
schema, a value copied from the prompt, a list's separator and next item's
opening). :class:`TokenLookup` indexes a sequence's n-grams (``n`` from 1 to
``max_n``) as tokens are appended, and proposes the tokens that followed the
latest earlier occurrence of the sequence's longest indexed suffix (the
drafter of Saxena's *prompt lookup decoding*, transformers'
``prompt_lookup_num_tokens`` and vLLM's n-gram speculator). The loop offers
its drafts to the checker's ``validate`` (so a draft never leaves the
constraint's language) and verifies them like any draft (:mod:`.drafts`).

Appending a token costs ``max_n`` dictionary writes and a proposal ``max_n``
reads, whatever the sequence's length: nothing on the hot path scans the
sequence.
"""

from __future__ import annotations

from collections.abc import Iterable


class TokenLookup:
    """The n-grams of a growing token sequence, each mapped to where the
    tokens after its latest occurrence begin (only occurrences with a token
    after them: the sequence's own suffix is never its match)."""

    __slots__ = ("_after", "max_n", "tokens")

    def __init__(self, tokens: Iterable[int] = (), max_n: int = 3):
        if max_n < 1:
            raise ValueError(f"max_n must be >= 1, got {max_n}")
        self.max_n = max_n
        self.tokens: list[int] = []
        self._after: dict[tuple[int, ...], int] = {}
        self.extend(tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def extend(self, tokens: Iterable[int]) -> None:
        """Append ``tokens``: each n-gram ending just before one is indexed
        as followed by it (a long run, a prompt, in bulk: C-level zips,
        about 0.1 µs an n-gram)."""
        seq, after, max_n = self.tokens, self._after, self.max_n
        new = [int(token) for token in tokens]
        if len(new) > _BULK:
            start = len(seq)
            seq.extend(new)
            end = len(seq)
            for n in range(1, max_n + 1):
                first = max(start, n)  # the first token with n tokens before it
                grams = zip(*(seq[first - n + i : end - n + i] for i in range(n)), strict=True)
                after.update(zip(grams, range(first, end), strict=True))  # (later ones win)
            return
        for token in new:
            end = len(seq)
            for n in range(1, min(max_n, end) + 1):
                after[tuple(seq[end - n : end])] = end
            seq.append(token)

    def propose(self, max_tokens: int) -> list[int]:
        """Up to ``max_tokens`` tokens: those after the latest earlier
        occurrence of the longest suffix (of at most ``max_n`` tokens) seen
        before; a match that runs into the suffix goes on with the draft
        itself (a repeating pattern repeats). ``[]`` when no suffix was seen
        before."""
        seq, after = self.tokens, self._after
        end = len(seq)
        for n in range(min(self.max_n, end), 0, -1):
            start = after.get(tuple(seq[end - n : end]))
            if start is not None:
                draft: list[int] = []
                for i in range(start, start + max_tokens):
                    draft.append(seq[i] if i < end else draft[i - end])
                return draft
        return []


#: runs longer than this are indexed in bulk (:meth:`TokenLookup.extend`)
_BULK = 8
