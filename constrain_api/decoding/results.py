"""What the decoding loop returns: sequences with their finish reasons, and per-step timings."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Why a sequence stopped.
FINISH_REASONS = {
    "eos": "the decoder chose EOS (allowed only when the text is in the language)",
    "finished": "the constraint allows nothing but EOS: the text is complete",
    "max_len": "max_len tokens were generated: truncated, possibly not in the language",
    "dead_end": "the checker allowed no token at all (an inexact or broken backend)",
}


@dataclass
class Generation:
    """One generated sequence.

    ``token_ids`` are the generated ids without the EOS that ended them;
    ``data`` their exact bytes. ``complete`` says whether the text is in the
    constraint's language (``None`` when decoding was unconstrained): always
    true after ``"eos"`` or ``"finished"``, and after ``"max_len"`` only if the
    text happens to be accepted there. ``score`` is the sum of the chosen
    tokens' log-probabilities under the decoder's constrained distribution
    (forced tokens add 0; ``nan`` under opportunistic masking, where the mask
    that normalises it is not built). ``interventions``: steps where the mask
    changed the pick; ``forced``: tokens appended without a choice.
    """

    prompt_index: int
    token_ids: list[int]
    data: bytes
    finish_reason: str
    complete: bool | None
    score: float
    interventions: int = 0
    forced: int = 0

    @property
    def text(self) -> str:
        """``data`` decoded as UTF-8 (invalid bytes replaced; use ``data`` for exactness)."""
        return self.data.decode("utf-8", errors="replace")

    @property
    def truncated(self) -> bool:
        """Whether generation stopped at ``max_len`` rather than by itself."""
        return self.finish_reason == "max_len"


@dataclass
class StepRecord:
    """One iteration of the loop. Times in seconds.

    ``rows``: sequences fed to the model; ``fed``: tokens fed (prompt,
    pending, drafts); ``forward``/``mask``/``apply``/``sample``/``update``:
    model forward pass, filling bitmasks on the CPU, applying them on the
    device, choosing tokens, advancing checkers. On a GPU the forward is
    the device's time (CUDA events) and runs while the CPU fills the masks;
    the other phases are the CPU's, ``sample`` including the wait for the
    picks (the one read back). ``overlapped``: constraint work done in the
    loop's worker thread while the pass was queued (``fill_beside_forward``;
    then ``mask`` is the wait for it after the pass). ``interventions``: picks the
    mask changed; ``forced``: tokens appended without a choice; ``drafted``/
    ``accepted``: speculative draft tokens fed and kept.
    """

    rows: int
    fed: int
    forward: float = 0.0
    mask: float = 0.0
    apply: float = 0.0
    sample: float = 0.0
    update: float = 0.0
    overlapped: float = 0.0
    interventions: int = 0
    forced: int = 0
    drafted: int = 0
    accepted: int = 0


TIMED = ("forward", "mask", "apply", "sample", "update")


@dataclass
class GenerationResult:
    """All sequences (``outputs[prompt]``: ``n`` per prompt; beams best first)
    and the step records. ``seconds``: wall time of the whole call."""

    outputs: list[list[Generation]]
    steps: list[StepRecord] = field(default_factory=list)
    seconds: float = 0.0

    def __iter__(self):
        return iter(self.outputs)

    @property
    def sequences(self) -> list[Generation]:
        """Every sequence, prompt by prompt."""
        return [g for group in self.outputs for g in group]

    @property
    def tokens(self) -> int:
        """Generated tokens over all sequences (EOS not counted)."""
        return sum(len(g.token_ids) for g in self.sequences)

    @property
    def tokens_per_second(self) -> float:
        """Generated tokens per second of wall time."""
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")

    def totals(self) -> dict[str, float]:
        """Sums over steps: the timed phases, forward passes, interventions,
        forced tokens, speculative drafts, and the work overlapped with the passes."""
        out: dict[str, float] = {name: sum(getattr(s, name) for s in self.steps) for name in TIMED}
        out["overlapped"] = sum(s.overlapped for s in self.steps)
        for name in ("interventions", "forced", "drafted", "accepted"):
            out[name] = sum(getattr(s, name) for s in self.steps)
        out["forward_passes"] = len(self.steps)
        return out
