"""The README's usage example runs as written (from the repository root)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from constrain_api import shared

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_usage_example_runs(monkeypatch):
    try:
        path = shared.shared_file("vocab/llama3/tokenizer.model")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    (block,) = re.findall(r"## Usage\n\n```python\n(.*?)```", README.read_text(), re.S)
    block = block.replace("../shared/vocab/llama3/tokenizer.model", str(path))
    namespace: dict = {}
    exec(compile(block, str(README), "exec"), namespace)
    checker = namespace["checker"]
    assert checker.rollback_depth == 1  # the example accepted one token
    # The decoding-loop example continues in the same namespace.
    (loop_block,) = re.findall(
        r"```python\n(from constrain_api.decoding import.*?)```", README.read_text(), re.S
    )
    exec(compile(loop_block, str(README), "exec"), namespace)
    result = namespace["result"]
    assert len(result.outputs[0]) == 4
    for g in result.outputs[0]:
        # \d is Unicode in the constraint, as in Python's re on str
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", g.data.decode()), g
