"""Shared fixtures: where the data beside the project (``../shared``) lies."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared data folder: ``$CONSTRAIN_SHARED``, default ``<repo>/../shared``."""
    return Path(os.environ.get("CONSTRAIN_SHARED") or REPO.parent / "shared")


@pytest.fixture(scope="session")
def shared_file(shared_dir: Path) -> Callable[[str], Path]:
    """``shared_file("vocab/llama3/tokenizer.model")``: the path, or skip the test if absent."""

    def get(relative: str) -> Path:
        path = shared_dir / relative
        if not path.exists():
            pytest.skip(f"{path} not found: set CONSTRAIN_SHARED to the shared data folder")
        return path

    return get
