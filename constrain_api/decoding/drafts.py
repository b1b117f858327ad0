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
(:meth:`Drafts.hold_back`).

Whether a pass's drafts pay depends on the rows and on the model and
device. Rows decode in lockstep, so a pass advances the batch by the fewest
tokens any row gains; with many rows, some row's draft almost always fails
early. And a wider pass costs little more on a GPU that waits on memory,
but on a CPU each judged position costs a full-vocabulary mask, argmax and
softmax. So by default (``policy="measured"``) a pass carries its drafts
only when the expected advance (from each row's acceptance so far) beats
the expected cost (a line fitted to the loop's own pass times against the
tokens fed, kept per model across calls): :class:`DraftCost`. While drafts
of the rows' lengths would not pay, rows only guess (a draft proposed only
to be held back would tell no more than its first token): every pass while
drafts come near paying (within a factor :data:`CLOSE`), after one pass in
:data:`GUESS_EVERY` while they are far from it (their advance too small, or
a wider pass too dear on this model and device), that interval doubling (up
to :data:`GUESS_EVERY_MOST`) each time judged guesses leave them far.

Drafts come from two sources (``source``, ``generate``'s ``draft_source``):
the checker's ``propose`` (the ``propose`` feature: what the constraint
and the backend's model of it expect) and a prompt lookup over the row's
own tokens (:mod:`.lookup`: what the text so far repeats), each cut to what
the checker accepts (``validate``). By default (``"auto"``) a row drafts
from its checker when it proposes, else by lookup; with ``"both"`` from
the one whose first tokens were the picked token more often lately
(:class:`Sources`): JSON keys the checker has learned, text that repeats
the prompt or itself."""

from __future__ import annotations

import contextlib
import weakref
from collections import deque

from .batch import Batch, Row
from .lookup import TokenLookup
from .results import StepRecord


class Drafts:
    """Drafts of up to ``speculative`` tokens, within ``max_len``, never EOS;
    each row's length set by how its drafts fared (the module docstring)."""

    def __init__(
        self,
        speculative: int,
        max_len: int,
        eos: frozenset[int],
        policy: str = "measured",
        model: object = None,
        source: str = "auto",
    ):
        if policy not in POLICIES:
            raise ValueError(f"draft policy must be one of {sorted(POLICIES)}, got {policy!r}")
        if source not in SOURCES:
            raise ValueError(f"draft source must be one of {sorted(SOURCES)}, got {source!r}")
        self.speculative, self.max_len, self.eos = speculative, max_len, eos
        self.source = source
        self.cost = cost_of(model) if policy == "measured" and speculative else None
        #: whether rows propose drafts (else only guesses): not while drafts
        #: of the rows' budgets would not pay (:meth:`DraftCost.gain`);
        #: weighed each pass while drafting, else after one pass in
        #: ``every`` once guesses were judged
        self.drafting = True
        #: whether such drafts come near paying (within a factor :data:`CLOSE`
        #: of it): rows then guess every pass, so their record soon shows it
        self.near = True
        #: rows far from paying guess after one pass in this many:
        #: :data:`GUESS_EVERY`, doubled (up to :data:`GUESS_EVERY_MOST`) by
        #: each weighing of judged guesses that leaves drafts far from paying
        self.every = GUESS_EVERY
        self.judged = False  # (a guess was judged since drafts were last weighed)
        self.passes = 0  # (passes of this call so far: hold_back counts them)

    def start(self, row: Row, constraint: object = None) -> None:
        """A new row may draft the full length first (a draft can ride along
        with the prompt, when it pays: it proposes in the first
        :meth:`hold_back`, once drafts were weighed), its acceptance record
        starting from what the rows of ``constraint`` (a compiled
        constraint) earned in earlier calls (:func:`remember`); its sources
        (:class:`Sources`) are those of ``self.source`` it has."""
        row.budget = self.speculative
        row.sources = Sources.of(row.checker, row.pending, self.source)
        prior = None
        with contextlib.suppress(TypeError):  # (None, or not weakly referable)
            prior = _PRIORS.get(constraint)
        if prior is not None:
            row.hits, row.tries = PRIOR_WEIGHT * prior, PRIOR_WEIGHT

    def remember(self, rows: list[Row], constraint: object) -> None:
        """Keep the mean acceptance of ``rows`` (those that drafted or
        guessed) as the prior of ``constraint``'s next rows."""
        if self.cost is None or constraint is None:
            return
        rates = [row.hits / row.tries for row in rows if row.tries > 0]
        if rates:
            with contextlib.suppress(TypeError):  # (not weakly referable)
                _PRIORS[constraint] = sum(rates) / len(rates)

    def propose(self, row: Row) -> None:
        """Set ``row.draft`` to what its sources propose and its checker
        would accept, at most ``row.budget`` tokens (EOS ends a draft; a
        proposal cut to nothing is a guess of its first token); a row whose
        budget is 0 only guesses (``row.guess``). While drafts would not pay
        (``drafting``) every row only guesses: each pass while drafts come
        near paying (``near``), after one pass in :data:`GUESS_EVERY` while
        they are far from it."""
        room = self.max_len - len(row.tokens) - 1
        sources = row.sources
        if not self.speculative or room <= 0 or sources is None:
            return
        if not self.drafting:  # guesses keep the row's record moving
            if self.guessing():
                row.guess = _first(sources.propose(row.tokens, 1))
            return
        if row.budget == 0:
            row.guess = _first(sources.propose(row.tokens, 1))
            return
        budget = min(row.budget, room)
        proposal = sources.propose(row.tokens, budget)
        draft = []
        for token in proposal:
            token = int(token)
            if token in self.eos or len(draft) == budget:
                break
            draft.append(token)
        row.draft = draft[: row.checker.validate(draft)]
        if not row.draft:  # (EOS first, or a token it would refuse: judged all the same)
            row.guess = _first(proposal)

    @staticmethod
    def forget(row: Row) -> None:
        """``row`` took a forced chain instead of a pick: its guess (and the
        proposal of the source asked for it) would be compared after the
        chain, so neither is judged."""
        row.guess = None
        if row.sources is not None:
            row.sources.asked = None

    def guessing(self) -> bool:
        """Whether rows guess this pass while drafts would not pay: every
        pass while drafts come near paying (``near``), else one in ``every``."""
        return self.near or self.passes % self.every == 0

    def settle(
        self, batch: Batch, index: int, row: Row, accepted: int, pick: int, rec: StepRecord
    ) -> None:
        """Count the first ``accepted`` draft slots of row ``index`` (``pick``
        the token picked after them); judge the draft's source; mask the
        rejected slots out of the cache; size the row's next draft."""
        if not row.draft:
            return
        if row.sources is not None:
            row.sources.judge(row.draft[0] if accepted else pick)
        rec.accepted += accepted
        row.length += accepted
        drafted = len(row.draft)
        row.hits = DECAY * row.hits + accepted
        row.tries = DECAY * row.tries + accepted + (accepted < drafted)
        # The chunk held the pending tokens (still in row.pending), then the draft.
        first = batch.chunk_start + len(row.pending)
        batch.hide_slots(index, first + accepted, first + drafted)
        if accepted == drafted:
            row.budget = min(self.speculative, max(row.budget, 2 * drafted))
        else:
            row.budget = accepted
        row.draft = []

    def hold_back(self, rows: list[Row]) -> None:
        """Drop this pass's drafts unless every row has one and drafted
        passes pay (:class:`DraftCost`).
        Rows decode in lockstep, so the batch takes as many passes as its
        longest row: while a row drafts nothing (free text), drafts of the
        others rarely take a pass off, yet widen the pass for every row
        (padding) and add positions to judge. A row whose draft is dropped
        keeps its budget, its first token is compared with the pick as a
        guess, and it proposes again after the pick: a draft, or only a
        guess while drafts of the rows' budgets would not pay (``drafting``,
        by the expected advance and the measured cost; see :meth:`propose`)."""
        self.passes += 1
        weigh = self.drafting or (self.judged and self.passes % self.every == 0)
        if self.cost is not None and weigh:
            guessed = not self.drafting  # (guesses were judged since the last weighing)
            budgets = [max(row.budget, len(row.draft)) for row in rows]
            gain = self.cost.gain(rows, budgets)
            self.near = gain >= 1 / CLOSE
            self.drafting = self.cost.pays(gain)
            self.judged = False
            if self.near or self.drafting:
                self.every = GUESS_EVERY
            elif guessed:  # judged guesses left drafts far from paying: guess less often
                self.every = min(2 * self.every, GUESS_EVERY_MOST)
        if self.passes == 1:  # the rows' first drafts (or guesses), now that drafts were weighed
            for row in rows:
                self.propose(row)
        if not any(row.draft for row in rows):
            return
        if all(row.draft for row in rows) and (self.cost is None or self.cost.drafts_pay(rows)):
            return
        for row in rows:
            if row.draft:  # its first token still tells whether drafts would hold
                row.guess = row.draft[0]
            row.draft = []

    def timed(self, drafted: bool, fed: int, seconds: float) -> None:
        """This pass fed ``fed`` tokens in ``seconds``, drafts among them or
        not (the first pass, which feeds the prompts, is not counted)."""
        if self.cost is not None and self.passes > 1:
            self.cost.add(drafted, fed, seconds)

    def observe(self, row: Row, pick: int) -> None:
        """The pick after a step without a draft: the guess (or the first
        token of a draft held back) counts as right or wrong, and a right
        one makes a row that drafted nothing draft one token again; the
        source asked for the guess is judged."""
        if row.guess is not None:
            if row.sources is not None:
                row.sources.judge(pick)
            right = row.guess == pick
            row.hits = DECAY * row.hits + right
            row.tries = DECAY * row.tries + 1
            if right:
                row.budget = max(row.budget, 1)
            self.judged = True
        row.guess = None


class Sources:
    """A row's draft sources, in order: its checker's ``propose`` and a
    :class:`~.lookup.TokenLookup` over its prompt and tokens. With more than
    one, each keeps a decayed record of how often its proposal's first
    token was the token picked there, and a row asks the likeliest right
    (:func:`_chance`, from even odds; the first in order on a tie) and, if
    it proposes nothing, the next. Only the source asked is judged
    (:meth:`judge`): a source wrong more often than not falls below one
    never judged, which is then tried, so the others cost nothing while
    the first is right. The lookup reads the row's tokens when it is asked
    (indexing those that came since), not at every step."""

    __slots__ = ("asked", "first", "hits", "lookup", "proposers", "seen", "tries")

    def __init__(self, proposers: list, lookup: TokenLookup | None):
        """``proposers``: ``propose(max_tokens)`` callables, the lookup's
        (``lookup.propose``) last when there is a ``lookup``."""
        self.proposers, self.lookup = proposers, lookup
        self.seen = 0  # the row's tokens already in the lookup
        n = len(proposers)
        self.hits, self.tries = [0.0] * n, [0.0] * n
        self.asked: int | None = None  # the source whose proposal is to be judged
        self.first = 0  # (its first token)

    @classmethod
    def of(cls, checker: object, prompt: list[int], source: str) -> Sources | None:
        """The sources ``source`` names that ``checker`` has (``None``: none)."""
        proposers: list = []
        lookup = None
        propose = getattr(checker, "propose", None)
        if source != "lookup" and propose is not None:
            proposers.append(propose)
        if source == "lookup" or source == "both" or (source == "auto" and not proposers):
            lookup = TokenLookup(prompt)
            proposers.append(lookup.propose)
        return cls(proposers, lookup) if proposers else None

    def propose(self, tokens: list[int], budget: int):
        """What the likeliest right source that proposes anything proposes
        (a list or an array), up to ``budget`` tokens, after the row's
        ``tokens``."""
        proposers, lookup = self.proposers, self.lookup
        self.asked = None
        if len(proposers) == 1:
            if lookup is not None:
                self._catch_up(tokens)
            return proposers[0](budget)
        hits, tries, last = self.hits, self.tries, len(proposers) - 1
        if last == 1:
            order = (0, 1) if _chance(hits[0], tries[0]) >= _chance(hits[1], tries[1]) else (1, 0)
        else:
            order = sorted(range(last + 1), key=lambda i: (-_chance(hits[i], tries[i]), i))
        for i in order:
            if i == last and lookup is not None:  # (the lookup comes last)
                self._catch_up(tokens)
            proposal = proposers[i](budget)
            if len(proposal):
                self.asked, self.first = i, int(proposal[0])
                return proposal
        return []

    def _catch_up(self, tokens: list[int]) -> None:
        """Give the lookup the row's tokens it has not seen."""
        if self.seen < len(tokens):
            self.lookup.extend(tokens[self.seen :])
            self.seen = len(tokens)

    def judge(self, first: int) -> None:
        """Credit the source last asked if its proposal began with ``first``."""
        i = self.asked
        if i is None:
            return
        self.asked = None
        self.hits[i] = DECAY * self.hits[i] + (self.first == first)
        self.tries[i] = DECAY * self.tries[i] + 1


#: where drafts come from (``generate``'s ``draft_source``): ``"checker"``
#: (its ``propose``), ``"lookup"`` (the row's own tokens, :mod:`.lookup`),
#: ``"auto"`` (the checker's where it proposes, else the lookup's),
#: ``"both"`` (the likelier right first: :class:`Sources`)
SOURCES = frozenset({"auto", "both", "checker", "lookup"})


def _chance(hits: float, tries: float) -> float:
    """A decayed record's chance of being right, from an even prior."""
    return (hits + 1.0) / (tries + 2.0)


def _first(tokens) -> int | None:
    """The first of a checker's proposed tokens (a list or an array), if any."""
    return int(tokens[0]) if len(tokens) else None


#: ``"measured"``: drafts fed when they are expected to pay (:class:`DraftCost`);
#: ``"always"``: whenever every row has one.
POLICIES = frozenset({"measured", "always"})

_COSTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PRIORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: how many draft tokens a row's prior from earlier calls counts as
PRIOR_WEIGHT = 3.0


def cost_of(model: object) -> DraftCost:
    """The :class:`DraftCost` of ``model``'s passes, kept while the model
    lives: what a pass costs is the model's and its device's, so each
    ``generate`` call goes on from what the last ones measured (a model that
    cannot be weakly referenced, or ``None``, gets a fresh one)."""
    try:
        cost = _COSTS.get(model)
        if cost is None:
            cost = _COSTS[model] = DraftCost()
    except TypeError:
        cost = DraftCost()
    return cost


#: while drafts could not pay, rows guess after one pass in this many: a
#: guess costs a ``propose(1)`` per row (1-2 µs for domino), at batch 16
#: a few per cent of a pass on a small model
GUESS_EVERY = 4

#: the longest interval between guesses while drafts stay far from paying:
#: at most this many passes late to notice that they would
GUESS_EVERY_MOST = 16

#: how much a row's acceptance counts keep of the past at each draft or guess
DECAY = 0.8


def acceptance(row: Row) -> float:
    """The chance that ``row``'s next draft token is right: its decayed
    record of draft tokens and guesses, from an even prior."""
    return _chance(row.hits, row.tries)


def expected_advance(rows: list[Row], lengths: list[int] | None = None) -> float:
    """Expected fewest tokens any row gains from a pass feeding its drafts
    (or drafts of ``lengths`` tokens): one, plus the chance that every row
    keeps its first ``k`` draft tokens, summed over ``k`` (each row's tokens
    right independently, with its :func:`acceptance`)."""
    chances = [acceptance(row) for row in rows]
    if lengths is None:
        lengths = [len(row.draft) for row in rows]
    total = 1.0
    for k in range(1, min(lengths, default=0) + 1):
        joint = 1.0
        for p in chances:
            joint *= p**k
        total += joint
        if joint < 1e-6:
            break
    return total


class _Passes:
    """One kind of pass's last ``keep`` times and tokens fed: their medians
    (a pass slowed by something else, the scheduler or a collection, does
    not move them; computed when read, as a pass is added every step but
    the medians are read only while drafts are weighed), and when it was
    last measured."""

    def __init__(self, keep: int):
        self.fed: deque[int] = deque(maxlen=keep)
        self.seconds: deque[float] = deque(maxlen=keep)
        self.count = 0
        self.last = 0  # the pass that last added to it
        self._medians: tuple[float, float] | None = (0.0, 0.0)

    def add(self, fed: int, seconds: float, now: int) -> None:
        self.fed.append(fed)
        self.seconds.append(seconds)
        self.count += 1
        self.last = now
        self._medians = None

    def medians(self) -> tuple[float, float]:
        """The median tokens fed and seconds of the recent passes."""
        medians = self._medians
        if medians is None:
            medians = self._medians = (_median(self.fed), _median(self.seconds))
        return medians

    def stale(self, now: int, max_age: int) -> bool:
        """Never measured, or not for a while: ``16 *`` its count of
        measurements, at most ``max_age`` (a choice made on few passes is
        revisited sooner)."""
        return self.count == 0 or now - self.last > min(16 * self.count, max_age)


def _median(values) -> float:
    """The median of ``values`` (``statistics.median``, without its checks:
    it is taken once a pass)."""
    ordered = sorted(values)
    half = len(ordered) // 2
    return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2


#: a choice within this factor of the other is re-measured (:class:`DraftCost`)
CLOSE = 2.0


class DraftCost:
    """Whether a pass's drafts are expected to pay: the expected advance
    (:func:`expected_advance`; a plain pass advances one) against the cost
    of the wider pass, from a line through the median time of recent plain
    passes and that of recent drafted passes against the tokens they fed
    (``seconds = a + b * fed``: what one more token costs this model on this
    device). Drafts are fed when the advance is at least ``margin`` times
    the cost ratio; an advance under ``margin`` never pays. Drafts are tried
    first; a plain pass is then measured unless drafts would pay even if a
    pass cost in proportion to its tokens. When the call is close (the
    advance within a factor :data:`CLOSE` of ``margin`` times the ratio),
    the kind not chosen is measured again once stale
    (:meth:`_Passes.stale`)."""

    def __init__(self, margin: float = 1.1, max_age: int = 64, keep: int = 9):
        self.plain, self.drafted = _Passes(keep), _Passes(keep)
        self.margin, self.max_age = margin, max_age
        self.passes = 0

    def drafts_pay(self, rows: list[Row]) -> bool:
        """Whether this pass (every row has a draft) should carry them."""
        return self.pays(self.gain(rows))

    def gain(self, rows: list[Row], lengths: list[int] | None = None) -> float:
        """The expected advance of the rows' drafts (of ``lengths`` tokens a
        row; by default their drafts) over ``margin`` times the cost ratio
        of the wider pass: drafts pay from 1. 0 for an advance under
        ``margin``; before a drafted pass was measured the ratio counts as
        1 (drafts are tried first), before a plain one as the tokens fed
        (unless drafts pay even if cost grew with width, a plain pass is
        measured)."""
        if lengths is None:
            lengths = [len(row.draft) for row in rows]
        advance = expected_advance(rows, lengths)
        if advance < self.margin:
            return 0.0
        fed = sum(len(row.pending) for row in rows)
        wider = fed + sum(lengths)
        if self.drafted.count == 0:
            ratio = 1.0
        elif self.plain.count == 0:
            ratio = wider / fed
        else:
            ratio = self.cost(wider) / self.cost(fed)
        return advance / (self.margin * ratio)

    def pays(self, gain: float) -> bool:
        """Whether drafts of this :meth:`gain` are fed: from 1, except that
        in a close call the kind not chosen is measured again once stale."""
        choice = gain >= 1.0
        measured = self.drafted.count and self.plain.count
        if measured and 1 / CLOSE <= gain <= CLOSE:
            other = self.plain if choice else self.drafted
            if other.stale(self.passes, self.max_age):
                return not choice
        return choice

    def cost(self, fed: float) -> float:
        """Predicted seconds of a pass feeding ``fed`` tokens (not below the
        plain passes' median: a wider pass is never cheaper)."""
        (p_fed, p_seconds), (d_fed, d_seconds) = self.plain.medians(), self.drafted.medians()
        slope = (d_seconds - p_seconds) / (d_fed - p_fed) if d_fed > p_fed else 0.0
        return max(p_seconds + max(slope, 0.0) * (fed - p_fed), p_seconds, 1e-9)

    def add(self, drafted: bool, fed: int, seconds: float) -> None:
        self.passes += 1
        (self.drafted if drafted else self.plain).add(fed, seconds, self.passes)
