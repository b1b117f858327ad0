"""Benchmark workloads: a named constraint with documents that satisfy it."""

from __future__ import annotations

from dataclasses import dataclass

from .specs import Constraint


@dataclass(frozen=True)
class Workload:
    """A benchmark case: ``constraint`` and valid ``documents`` whose natural
    tokenizations drive the decoding paths. ``name`` is unique in a run."""

    name: str
    constraint: Constraint
    documents: tuple[str, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "documents", tuple(self.documents))
        if not self.name:
            raise ValueError("a workload needs a name")
