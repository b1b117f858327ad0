"""benchmarks/gpu/passes.py, the device run's pass-cost part, on the CPU
with the small and the Llama-3 vocabularies (the device's): every case
timed and written, so the script a device session runs once does not fail
there."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from constrain_api.shared import shared_file

SCRIPT = Path(__file__).resolve().parents[1] / "gpu" / "passes.py"


@pytest.mark.parametrize("vocab", ["small", pytest.param("llama3", marks=pytest.mark.shared)])
def test_every_width_batch_and_mask_is_timed(tmp_path, capsys, vocab):
    if vocab == "llama3":
        try:
            shared_file("vocab/llama3/tokenizer.model")
        except FileNotFoundError as e:
            pytest.skip(str(e))
    spec = importlib.util.spec_from_file_location("passes", SCRIPT)
    passes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(passes)
    out = tmp_path / "passes.json"
    args = ["--vocab", vocab, "--batch", "1", "--batch", "2", "--prompt", "6", "--repeats", "1"]
    assert passes.main([*args, "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["model"] == "tiny" and data["device"] in ("cpu", "cuda:0")
    cases = {(r["batch"], r["width"], r["holes"]) for r in data["rows"]}
    assert cases == {(b, w, h) for b in (1, 2) for w in (1, 2, 3, 5) for h in (False, True)}
    assert len(data["rows"]) == len(cases)
    assert all(r["device_ms"] > 0 and r["host_ms"] > 0 for r in data["rows"])
    printed = capsys.readouterr().out
    assert printed.count("x\n") == len(cases)  # one line per case, its ratio last
