"""Shared fixtures: where the data beside the project (``../shared``) lies."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from constrain_api import shared


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared data folder: ``$CONSTRAIN_SHARED``, default ``<repo>/../shared``."""
    return shared.shared_dir()


@pytest.fixture(scope="session")
def shared_file() -> Callable[[str], Path]:
    """``shared_file("vocab/llama3/tokenizer.model")``: the path, or skip the test if absent."""

    def get(relative: str) -> Path:
        try:
            return shared.shared_file(relative)
        except FileNotFoundError as e:
            pytest.skip(str(e))

    return get
