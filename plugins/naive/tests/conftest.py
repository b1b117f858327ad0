"""Fixtures of the naive backend's tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import constrain_api as ca

sys.path.insert(0, str(Path(__file__).parent))  # the brute-force helpers in brute.py


@pytest.fixture(scope="session")
def naive():
    """The naive backend, found through its entry point."""
    return ca.get("naive")
