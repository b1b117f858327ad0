"""``ScriptedLM``: a model with no network that wants a given token sequence.

It is how minimal invasiveness is tested: a backend that is minimally
invasive lets a model that "wants" the natural tokenization of a valid
document produce exactly that tokenization. After the prompt, a row's logits
are noise plus ``strength`` on the target's next token while the output so
far equals the target's prefix, on EOS once the whole target is out, and on
nothing once the output has left the target. "The output so far" is read
from the attention mask at every call, so cache slots the loop masks out
later (rejected speculative draft tokens) drop out of it, as they do from a
real model's attention.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from numbers import Integral
from typing import Any

import torch


@dataclass
class _RowState:
    target: int  # index into ScriptedLM.targets
    prompt: int = -1  # cache slots of the prompt (-1: not fed yet)
    fed: list[int] = field(default_factory=list)  # the token in every cache slot


class ScriptedLM:
    """Implements ``CausalLM``; see the module docstring.

    ``targets``: one token-id sequence, or several. At the first call with
    ``B`` rows, row ``r`` follows ``targets[r * len(targets) // B]`` (``B``
    must be a multiple of ``len(targets)``: ``n`` rows per prompt, prompt by
    prompt, as the loop lays them out), and the tokens of that first call
    are the prompt, unless ``prompt_length`` says how many slots it has (needed
    when the loop feeds a speculative draft with the prompt). ``noise``:
    standard deviation of seeded Gaussian noise.
    """

    def __init__(
        self,
        targets: Sequence[int] | Sequence[Sequence[int]],
        *,
        width: int,
        eos_id: int,
        strength: float = 10.0,
        noise: float = 0.0,
        seed: int = 0,
        prompt_length: int | None = None,
        device: str | torch.device = "cpu",
    ):
        items = list(targets)
        if items and all(isinstance(t, Integral) for t in items):
            items = [items]
        if not items:
            raise ValueError("ScriptedLM needs at least one target")
        self.targets = [tuple(int(t) for t in target) for target in items]
        for target in self.targets:
            if any(not 0 <= t < width for t in target) or not 0 <= eos_id < width:
                raise ValueError(f"target ids must lie in [0, {width})")
        self.width = width
        self.eos_id = eos_id
        self.strength = strength
        self.noise = noise
        self.prompt_length = prompt_length
        self.device = torch.device(device)
        self._generator = torch.Generator(device=self.device).manual_seed(seed)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        cache: Any | None,
    ) -> tuple[torch.Tensor, list[_RowState]]:
        """Logits ``[B, T, width]`` and the per-row states (the "cache")."""
        rows, steps = input_ids.shape
        if cache is None:
            if rows % len(self.targets):
                raise ValueError(f"{rows} rows cannot be split among {len(self.targets)} targets")
            cache = [_RowState(r * len(self.targets) // rows) for r in range(rows)]
        ids = input_ids.tolist()
        mask = attention_mask.tolist()  # one column per cache slot, this call's last
        logits = torch.zeros(rows, steps, self.width, device=self.device)
        if self.noise:
            logits.normal_(0.0, self.noise, generator=self._generator)
        hits: tuple[list[int], list[int], list[int]] = ([], [], [])
        for b, state in enumerate(cache):
            target = self.targets[state.target]
            first_new = len(state.fed)
            state.fed.extend(ids[b])
            if state.prompt < 0:  # the first call's tokens are the prompt, unless told
                state.prompt = len(state.fed) if self.prompt_length is None else self.prompt_length
            if state.prompt >= len(state.fed):
                favoured = [self._favoured(target, [])] * steps
            else:
                # the output so far: the attended slots after the prompt (slots
                # masked out later, such as rejected draft tokens, drop out)
                attended = mask[b][-len(state.fed) :]
                out = [state.fed[i] for i in range(state.prompt, first_new) if attended[i]]
                favoured = []
                for i in range(first_new, len(state.fed)):
                    if attended[i] and i >= state.prompt:
                        out.append(state.fed[i])
                    favoured.append(self._favoured(target, out))
            for t, token in enumerate(favoured):
                if token is not None:
                    hits[0].append(b)
                    hits[1].append(t)
                    hits[2].append(token)
        if hits[0]:
            logits[hits] += self.strength  # one (row, position) at most once
        return logits, cache

    def _favoured(self, target: tuple[int, ...], out: list[int]) -> int | None:
        """The target's next token while ``out`` is its prefix, then EOS; else nothing."""
        n = len(out)
        if n > len(target) or tuple(out) != target[:n]:
            return None
        return target[n] if n < len(target) else self.eos_id

    def drop_slots(self, cache: list[_RowState], count: int) -> list[_RowState]:
        """The states without their last ``count`` slots."""
        for state in cache:
            del state.fed[len(state.fed) - count :]
        return cache

    def select_rows(self, cache: list[_RowState], rows: torch.Tensor) -> list[_RowState]:
        """States of ``rows`` (copies, so repeated rows evolve independently)."""
        return [replace(cache[r], fed=list(cache[r].fed)) for r in rows.tolist()]
