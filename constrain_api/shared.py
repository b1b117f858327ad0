"""Where the data beside the project lies (real vocabularies, MaskBench, the
JSON Schema Test Suite): ``$CONSTRAIN_SHARED``, by default ``../shared`` next
to the checkout. Tests and benchmarks read it in place and skip when absent."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "CONSTRAIN_SHARED"
_REPO = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    """``$CONSTRAIN_SHARED``, or ``../shared`` beside the repository."""
    return Path(os.environ.get(ENV_VAR) or _REPO.parent / "shared")


def shared_file(relative: str) -> Path:
    """The path of ``relative`` in the shared folder; ``FileNotFoundError``
    saying how to point at it when it is absent."""
    path = shared_dir() / relative
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: set {ENV_VAR} to the shared data folder")
    return path
