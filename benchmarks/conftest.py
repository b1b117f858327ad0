"""Fixtures of the throughput suite: the real vocabularies from the shared folder."""

from __future__ import annotations

import pytest

from constrain_api import Vocabulary, shared


@pytest.fixture(scope="session")
def llama3() -> Vocabulary:
    """Llama-3 (128,000 tokens + 256 specials), or skip when the shared folder is absent."""
    try:
        path = shared.shared_file("vocab/llama3/tokenizer.model")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    return Vocabulary.from_llama3(path)
