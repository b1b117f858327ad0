"""Speculative drafts: tokens a checker proposes (``propose(max_tokens)``),
fed with the pending token in one forward pass and kept as far as the
decoder's picks agree with them, so the output is the same as without."""

from __future__ import annotations

from .batch import Batch, Row
from .results import StepRecord


class Drafts:
    """Drafts of up to ``speculative`` tokens, within ``max_len``, never EOS."""

    def __init__(self, speculative: int, max_len: int, eos: frozenset[int]):
        self.speculative, self.max_len, self.eos = speculative, max_len, eos

    def propose(self, row: Row) -> None:
        """Set ``row.draft`` to what its checker proposes and would accept."""
        budget = min(self.speculative, self.max_len - len(row.tokens) - 1)
        propose = getattr(row.checker, "propose", None)
        if budget <= 0 or propose is None:
            return
        draft = []
        for token in propose(budget):
            token = int(token)
            if token in self.eos or len(draft) == budget:
                break
            draft.append(token)
        row.draft = draft[: row.checker.validate(draft)]

    @staticmethod
    def settle(batch: Batch, index: int, row: Row, accepted: int, rec: StepRecord) -> None:
        """Count the first ``accepted`` draft slots of row ``index``; mask the
        rejected ones out of the cache."""
        if not row.draft:
            return
        rec.accepted += accepted
        row.length += accepted
        # The chunk held the pending tokens (still in row.pending), then the draft.
        first = batch.chunk_start + len(row.pending)
        batch.hide_slots(index, first + accepted, first + len(row.draft))
        row.draft = []
