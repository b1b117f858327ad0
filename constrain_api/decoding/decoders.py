"""The decoders (LMQL's set) and the logit transforms they share.

A :class:`Decoder` is a small value saying how the next token is chosen:
``argmax()``, ``sample(n, temperature)``, ``beam(n)``,
``beam_sample(n, temperature)``. :class:`Sampling` holds the parameters that
reshape the distribution (``top_k``, ``top_p`` and the penalties).

Order of operations on one step's logits, the same for every backend:
penalties on the model's logits → the constraint's mask → temperature →
``top_k``/``top_p`` among the allowed tokens → the pick. Sampling draws by
the Gumbel-max trick (argmax of logits plus Gumbel noise), so the pick the
model would have made *without* the mask is defined with the same random
numbers, which is how the loop counts interventions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

DECODER_KINDS = ("argmax", "sample", "beam", "beam_sample")


@dataclass(frozen=True)
class Decoder:
    """How tokens are chosen. ``n``: sequences per prompt (samples or beams)."""

    kind: str = "argmax"
    n: int = 1
    temperature: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in DECODER_KINDS:
            raise ValueError(f"unknown decoder {self.kind!r}; one of {', '.join(DECODER_KINDS)}")
        if self.n < 1:
            raise ValueError(f"{self.kind} needs n >= 1, got {self.n}")
        if not self.temperature > 0 or math.isinf(self.temperature):
            raise ValueError(f"temperature must be a positive number, got {self.temperature}")
        if self.kind == "argmax" and self.n != 1:
            raise ValueError("argmax yields one sequence per prompt")

    @property
    def is_beam(self) -> bool:
        """Whether sequences are ranked and pruned jointly (beam search)."""
        return self.kind in ("beam", "beam_sample")

    @property
    def is_random(self) -> bool:
        """Whether the decoder draws random numbers (and so uses the seed)."""
        return self.kind in ("sample", "beam_sample")


def argmax() -> Decoder:
    """Greedy decoding: the most likely allowed token each step."""
    return Decoder("argmax")


def sample(n: int = 1, temperature: float = 1.0) -> Decoder:
    """``n`` independent samples per prompt at ``temperature``."""
    return Decoder("sample", n, temperature)


def beam(n: int) -> Decoder:
    """Beam search with ``n`` beams; returns the ``n`` best, best first."""
    return Decoder("beam", n)


def beam_sample(n: int, temperature: float = 1.0) -> Decoder:
    """Stochastic beam search: each beam's candidates are sampled, then ranked."""
    return Decoder("beam_sample", n, temperature)


@dataclass(frozen=True)
class Sampling:
    """Distribution-shaping parameters (the LMQL/transformers meanings).

    ``top_k``: keep the ``k`` most likely allowed tokens. ``top_p``: keep the
    smallest set of allowed tokens whose probability reaches ``p``.
    ``repetition_penalty`` (CTRL): divide positive logits of tokens already in
    the prompt or the output by it, multiply negative ones. ``frequency_penalty``
    and ``presence_penalty`` (OpenAI): subtract ``count * f + (count > 0) * p``
    for tokens already generated.
    """

    top_k: int | None = None
    top_p: float | None = None
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0

    def __post_init__(self) -> None:
        if self.top_k is not None and self.top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {self.top_k}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must lie in (0, 1], got {self.top_p}")
        if not self.repetition_penalty > 0:
            raise ValueError(f"repetition_penalty must be > 0, got {self.repetition_penalty}")

    @property
    def penalized(self) -> bool:
        """Whether any penalty is active (the loop then tracks token counts)."""
        return (
            self.repetition_penalty != 1.0
            or self.frequency_penalty != 0.0
            or self.presence_penalty != 0.0
        )

    @property
    def filtered(self) -> bool:
        """Whether top-k or top-p filtering is active."""
        return self.top_k is not None or (self.top_p is not None and self.top_p < 1)


def apply_penalties_(
    logits: torch.Tensor, seen: torch.Tensor, counts: torch.Tensor, params: Sampling
) -> torch.Tensor:
    """Apply the penalties in place to ``[N, W]`` logits.

    ``seen`` (bool ``[N, W]``): tokens in the prompt or output so far;
    ``counts`` (float ``[N, W]``): occurrences in the output so far, zero
    wherever ``seen`` is False (the loop's batch keeps them so).

    On a CPU only the seen logits are read and rewritten (a few hundred a
    row), with the same arithmetic: the dense ops cost 1.5-6.7 ms a pass on
    16 x 128k logits, the repetition penalty's select branching per element.
    On a GPU the dense ops stay: finding the seen ids there would wait for
    the device.
    """
    if logits.device.type == "cpu" and logits.dim() == 2:
        return _penalize_seen_(logits, seen, counts, params)
    return _penalize_all_(logits, seen, counts, params)


def _penalize_all_(
    logits: torch.Tensor, seen: torch.Tensor, counts: torch.Tensor, params: Sampling
) -> torch.Tensor:
    """:func:`apply_penalties_` by dense ops over every logit (a GPU's way)."""
    return torch.where(seen, _penalized(logits, counts, params), logits, out=logits)


def _penalize_seen_(
    logits: torch.Tensor, seen: torch.Tensor, counts: torch.Tensor, params: Sampling
) -> torch.Tensor:
    """:func:`apply_penalties_` on the seen logits of CPU tensors alone
    (numpy finds them: 0.3 ms for 16 x 128k flags, torch's ``nonzero`` 0.6 ms)."""
    flat = np.flatnonzero(seen.numpy())
    if flat.size:
        at = tuple(torch.from_numpy(ids) for ids in np.divmod(flat, seen.shape[-1]))
        logits[at] = _penalized(logits[at], counts[at], params)
    return logits


def _penalized(values: torch.Tensor, counts: torch.Tensor, params: Sampling) -> torch.Tensor:
    """``values`` (logits of seen tokens) with the penalties of their output
    ``counts``, as a new tensor of their dtype (rounded after each step)."""
    if params.repetition_penalty != 1.0:
        p = params.repetition_penalty
        values = torch.where(values > 0, values / p, values * p)
    else:
        values = values.clone()
    if params.frequency_penalty or params.presence_penalty:
        values -= counts * params.frequency_penalty
        values -= (counts > 0).to(values.dtype) * params.presence_penalty
    return values


def filter_(logits: torch.Tensor, params: Sampling) -> torch.Tensor:
    """Set to ``-inf`` in place what ``top_k``/``top_p`` exclude from ``[N, W]`` logits.

    The most likely token always survives, so a row with any finite logit
    keeps at least one.
    """
    if params.top_k is not None and params.top_k < logits.shape[-1]:
        kth = torch.topk(logits, params.top_k, dim=-1).values[..., -1:]
        logits.masked_fill_(logits < kth, float("-inf"))
    if params.top_p is not None and params.top_p < 1:
        ordered, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(ordered, dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs  # mass strictly ahead of each token
        drop = before >= params.top_p
        drop[..., 0] = False
        logits.masked_fill_(drop.scatter(-1, order, drop), float("-inf"))
    return logits


def gumbel_rows(logits: torch.Tensor, generators: list[torch.Generator]) -> torch.Tensor:
    """Standard Gumbel noise shaped like ``[N, W]`` logits, row ``i`` drawn from
    ``generators[i]``: a sequence's draws do not depend on the other rows."""
    width, dev = logits.shape[-1], logits.device
    u = torch.stack(
        [torch.rand(width, generator=g, device=dev, dtype=torch.float32) for g in generators]
    )
    tiny = torch.finfo(torch.float32).tiny
    return -torch.log(-torch.log(u.clamp_(min=tiny, max=1.0 - 1e-7)))


def pick(
    logits: torch.Tensor, decoder: Decoder, params: Sampling, noise: torch.Tensor | None
) -> torch.Tensor:
    """The chosen ids ``[N]`` from ``[N, W]`` logits (already penalised and
    masked): temperature, filters, then argmax, with Gumbel ``noise`` when sampling."""
    scores = shape(logits, decoder, params)
    if noise is not None:
        scores = scores + noise
    return best_ids(scores)


def best_ids(scores: torch.Tensor) -> torch.Tensor:
    """``scores.argmax(dim=-1)`` of ``[N, W]`` scores: the first of equal
    maxima, a NaN counting as the largest. On a CPU numpy's argmax computes
    it (the same rule): torch's CPU argmax reads 128k logits a row about ten
    times slower (16 rows: 3.3 against 0.28 ms)."""
    if (
        scores.device.type == "cpu"
        and scores.dim() == 2
        and scores.dtype in _NUMPY_FLOATS
        and not scores.requires_grad  # (a model run outside inference mode)
    ):
        return torch.from_numpy(np.argmax(scores.numpy(), axis=-1))
    return scores.argmax(dim=-1)


_NUMPY_FLOATS = (torch.float32, torch.float64)


def shape(logits: torch.Tensor, decoder: Decoder, params: Sampling) -> torch.Tensor:
    """Temperature and filters applied to ``logits``: the decoder's
    distribution in logit form (``log_softmax`` of it gives the log-probs).
    ``logits`` itself when there is nothing to apply (temperature 1, no
    filter), else a new tensor; ``logits`` is never changed. Callers only
    read the result (a copy of 128k logits per row costs more than the
    argmax that reads them, on a CPU)."""
    if decoder.temperature != 1.0:
        scores = logits / decoder.temperature
    elif params.filtered:
        scores = logits.clone()
    else:
        return logits
    return filter_(scores, params) if params.filtered else scores
