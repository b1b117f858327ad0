"""Speculative drafts: tokens a checker proposes (``propose(max_tokens)``),
fed with the pending token in one forward pass and kept as far as the
decoder's picks agree with them, so the output is the same as without.

A draft costs forward-pass width whether it is kept or not, so each row
drafts as many tokens as its last draft earned: a draft cut at its
``k``-th token is followed by one of ``k`` tokens, none when its first
token was wrong; a draft kept whole by one twice as long (up to
``speculative``). A row that drafts nothing still asks its checker for one
token each step (a *guess*, never fed) and drafts one token again once a
guess equals the pick. Workloads whose drafts miss (free text) so decode
as without drafts, and those whose drafts hold (JSON keys) keep them. In a
batch, a pass carries drafts only when every row has one
(:meth:`Drafts.hold_back`)."""

from __future__ import annotations

from .batch import Batch, Row
from .results import StepRecord


class Drafts:
    """Drafts of up to ``speculative`` tokens, within ``max_len``, never EOS;
    each row's length set by how its drafts fared (the module docstring)."""

    def __init__(self, speculative: int, max_len: int, eos: frozenset[int]):
        self.speculative, self.max_len, self.eos = speculative, max_len, eos

    def start(self, row: Row) -> None:
        """A new row drafts the full length first (a draft can ride along
        with the prompt)."""
        row.budget = self.speculative
        self.propose(row)

    def propose(self, row: Row) -> None:
        """Set ``row.draft`` to what its checker proposes and would accept,
        at most ``row.budget`` tokens; a row whose budget is 0 only guesses
        (``row.guess``)."""
        room = self.max_len - len(row.tokens) - 1
        propose = getattr(row.checker, "propose", None)
        if not self.speculative or room <= 0 or propose is None:
            return
        if row.budget == 0:
            guess = propose(1)
            row.guess = int(guess[0]) if guess else None
            return
        budget = min(row.budget, room)
        draft = []
        for token in propose(budget):
            token = int(token)
            if token in self.eos or len(draft) == budget:
                break
            draft.append(token)
        row.draft = draft[: row.checker.validate(draft)]

    def settle(self, batch: Batch, index: int, row: Row, accepted: int, rec: StepRecord) -> None:
        """Count the first ``accepted`` draft slots of row ``index``; mask the
        rejected ones out of the cache; size the row's next draft."""
        if not row.draft:
            return
        rec.accepted += accepted
        row.length += accepted
        # The chunk held the pending tokens (still in row.pending), then the draft.
        first = batch.chunk_start + len(row.pending)
        batch.hide_slots(index, first + accepted, first + len(row.draft))
        drafted = len(row.draft)
        if accepted == drafted:
            row.budget = min(self.speculative, max(row.budget, 2 * drafted))
        else:
            row.budget = accepted
        row.draft = []

    @staticmethod
    def hold_back(rows: list[Row]) -> None:
        """Drop this pass's drafts unless every row has one. Rows decode in
        lockstep, so the batch takes as many passes as its longest row: while
        a row drafts nothing (free text), drafts of the others rarely take a
        pass off, yet widen the pass for every row (padding) and add
        positions to judge. A row whose draft is dropped keeps its budget and
        proposes again after its next pick."""
        if any(row.draft for row in rows) and not all(row.draft for row in rows):
            for row in rows:
                row.draft = []

    @staticmethod
    def observe(row: Row, pick: int) -> None:
        """The pick after a step without a draft: a guess that equals it
        makes the row draft (one token) again."""
        if row.guess is not None and row.guess == pick:
            row.budget = 1
        row.guess = None
