"""benchmarks/gpu/fills.py, the device run's mask-fill part, on the CPU with
the small vocabulary: every case timed and written, so the script a device
session runs once does not fail there."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "gpu" / "fills.py"


def test_every_workload_batch_and_column_is_timed(tmp_path, capsys):
    pytest.importorskip("constrain_llguidance")
    spec = importlib.util.spec_from_file_location("fills", SCRIPT)
    fills = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fills)
    out = tmp_path / "fills.json"
    args = ["--vocab", "small", "--batch", "1", "--batch", "3", "--repeats", "2", "--threads", "2"]
    args += ["--loop-rounds", "2"]
    assert fills.main([*args, "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["model"] == "tiny" and data["threads"] == 2
    cases = {(r["workload"], r["batch"]) for r in data["rows"]}
    assert cases == {(w, b) for w in fills.WORKLOADS for b in (1, 3)}
    assert len(data["rows"]) == len(cases)
    assert all(r[c] > 0 for r in data["rows"] for c in fills.COLUMNS)
    loop = ("loop_calling_tps", "loop_beside_tps", "loop_ratio")
    assert all(r[c] > 0 for r in data["rows"] for c in loop)
    printed = capsys.readouterr().out
    # two tables: the fills, then the loop pairs
    assert sum(line.split()[0] in fills.WORKLOADS for line in printed.splitlines()) == 2 * len(
        cases
    )
