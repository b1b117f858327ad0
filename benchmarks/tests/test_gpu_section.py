"""The report's GPU section (constrain_bench.gpu): a device run's files are
taken beside the report, rendered into one section that replaces the last,
and kept by every later report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from constrain_bench import cli, gpu

from constrain_api.shared import shared_file

ENV = """date 2026-11-29
name, memory.total [MiB], driver_version
NVIDIA H200, 143771 MiB, 570.86
torch 2.13.0 transformers 5.24.0 triton 3.5.0 numba 0.62.0
"""


def _apply(how: str, dtype: str, batch: int, seconds: float) -> dict:
    return {"params": {"how": how, "dtype": dtype, "batch": batch}, "stats": {"median": seconds}}


def _loop_entry(name: str, info: dict, **params) -> dict:
    phases = dict.fromkeys(("mask", "apply", "sample", "update", "other"), 0.0001)
    return {
        "name": name,
        "params": {"vocab": "llama3", "batch": 1, **params},
        "extra_info": {
            "per_pass_s": {**phases, "forward": 0.012},
            "share": 0.04,
            "model": "llama-3.2-1b",
            "device": "cuda:0",
            "rounds": 2,
            **info,
        },
    }


def _run(folder: Path, *, parts: tuple[str, ...]) -> Path:
    """A device run's ``$OUT`` with the named parts' files."""
    folder.mkdir(parents=True)
    (folder / "env.txt").write_text(ENV)
    (folder / "tests.txt").write_text("5 passed")  # (a log the section does not read)
    if "apply" in parts:
        applies = [
            _apply("kernel", "float32", 16, 20e-6),
            _apply("torch", "float32", 16, 80e-6),
            _apply("xgrammar", "float32", 16, 25e-6),
            _apply("kernel", "bfloat16", 1, 15e-6),
        ]
        (folder / "apply.json").write_text(json.dumps({"benchmarks": applies}))
    if "passes" in parts:
        rows = [
            {"batch": 1, "width": 1, "holes": False, "device_ms": 12.0, "host_ms": 11.5},
            {"batch": 1, "width": 3, "holes": True, "device_ms": 14.0, "host_ms": 13.0},
        ]
        passes = {"model": "llama-3.2-1b", "device": "cuda:0", "rows": rows}
        (folder / "passes.json").write_text(json.dumps(passes))
    if "fills" in parts:
        row = {"workload": "koo-json-object", "batch": 16, "serial": 900.0, "parallel": 300.0}
        row |= {"forward": 14000.0, "beside_serial": 14100.0, "beside_parallel": 14050.0}
        row |= {"loop_calling_tps": 900.0, "loop_beside_tps": 960.0, "loop_ratio": 1.07}
        fills = {"model": "llama-3.2-1b", "device": "cuda:0", "threads": 0, "rows": [row]}
        (folder / "fills.json").write_text(json.dumps(fills))
    if "loop" in parts:
        raw = folder / "bench" / "raw"
        raw.mkdir(parents=True)
        entries = [
            _loop_entry("test_loop_unconstrained[llama3-1]", {"tokens_per_s": 80.0}),
            _loop_entry(
                "test_loop[llama3-domino-w-1]",
                {"tokens_per_s": 79.5, "ratio": 0.994, "unconstrained_tokens_per_s": 80.0},
                backend="domino",
                workload="w",
            ),
        ]
        (raw / "bench.json").write_text(json.dumps({"benchmarks": entries}))
        (raw / "refusals.json").write_text("[]")
    return folder


def test_a_device_run_becomes_the_reports_gpu_section(tmp_path):
    run = _run(tmp_path / "run", parts=("apply", "passes", "fills", "loop"))
    out = tmp_path / "bench"
    out.mkdir()
    (out / "REPORT.md").write_text("# Throughput report\n\n## MaskBench\n\nfigures\n")
    path = gpu.take(run, out)
    assert sorted(p.name for p in (out / "gpu").iterdir()) == sorted([*gpu.FILES, "loop"])
    assert sorted(p.name for p in (out / "gpu" / "loop").iterdir()) == sorted(gpu.LOOP_FILES)
    text = path.read_text()
    assert text.startswith("# Throughput report\n\n## MaskBench\n\nfigures\n\n## On a GPU\n")
    assert "on NVIDIA H200 (2026-11-29; torch 2.13.0 transformers 5.24.0" in text
    lines = text.splitlines()
    assert "| 16 | float32 | 20.0 | 80.0 | 25.0 | 0.80 |" in lines  # kernel ÷ XGrammar
    assert "| 1 | bfloat16 | 15.0 | — | — | — |" in lines
    assert "| 1 | 3 | yes | 14.00 | 13.00 | 1.17× |" in lines  # ÷ one token, no hole
    assert (
        "| `koo-json-object` | 16 | 900 | 300 | 14,000 | 14,100 | 14,050 | 900 → 960 (1.07×) |"
        in lines
    )
    assert "### End to end: tokens/s on the shared loop, batch 1 (ratio to unconstrained)" in lines
    assert any("`llama-3.2-1b` shapes, on cuda:0" in line for line in lines)
    assert any(line.startswith("| `w` | 80 (0.99×") for line in lines)

    # a later run replaces the section (and its files) in place; what follows stays
    path.write_text(path.read_text() + "\n## Scaling\n\nplots\n")
    gpu.take(_run(tmp_path / "run2", parts=("apply",)), out)
    text = path.read_text()
    assert text.count("## On a GPU") == 1 and "### A forward pass by its width" not in text
    assert "### Applying a bitmask on the GPU" in text
    assert text.index("## MaskBench") < text.index("## On a GPU") < text.index("## Scaling")
    assert sorted(p.name for p in (out / "gpu").iterdir()) == ["apply.json", "env.txt"]


def test_a_folder_without_a_device_runs_files_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="holds none of a device run's files"):
        gpu.take(tmp_path / "empty", tmp_path / "bench")
    assert gpu.section(tmp_path / "nowhere") == []


def test_every_report_keeps_the_last_device_runs_section(tmp_path):
    """The report command writes the section from ``OUT/gpu`` (here through
    ``--report-only``, the path a full run ends with too)."""
    out = tmp_path / "bench"
    gpu.take(_run(tmp_path / "run", parts=("passes",)), out)
    (out / "REPORT.md").unlink()
    raw = out / "raw"
    raw.mkdir()
    (raw / "run.json").write_text(json.dumps({"command": "x", "seconds": 60.0, "quick": True}))
    assert cli.main(["--out", str(out), "--report-only"]) == 0
    text = (out / "REPORT.md").read_text()
    assert "## On a GPU" in text and "### A forward pass by its width" in text


def _pack(run: Path, archive: Path) -> None:
    """``run``'s files packed as ``check.sh`` packs them (paths from ``./``)."""
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(run, arcname=".")


@pytest.mark.parametrize("given", ["folder", "archive"])
def test_the_packed_run_the_device_brings_back_is_taken(tmp_path, given):
    """The device tool returns 8 files at most, so check.sh packs its parts'
    files into run.tgz: its folder (files_at) or the archive itself gives
    the section the unpacked files give."""
    run = _run(tmp_path / "run", parts=("apply", "passes", "fills", "loop"))
    unpacked = tmp_path / "unpacked"
    gpu.take(run, unpacked)
    came_back = tmp_path / "files_at"
    came_back.mkdir()
    _pack(run, came_back / gpu.ARCHIVE)
    packed = tmp_path / "packed"
    gpu.take(came_back if given == "folder" else came_back / gpu.ARCHIVE, packed)
    assert (packed / "REPORT.md").read_text() == (unpacked / "REPORT.md").read_text()
    assert "### Applying a bitmask on the GPU" in (packed / "REPORT.md").read_text()
    for path in (unpacked / "gpu").rglob("*"):
        twin = packed / "gpu" / path.relative_to(unpacked / "gpu")
        assert twin.exists() and (path.is_dir() or twin.read_bytes() == path.read_bytes())


@pytest.mark.shared
def test_check_sh_packs_each_part_it_finishes(tmp_path):
    """check.sh on this CPU (the tiny model, its pass-cost part): the part's
    files are packed into $OUT/run.tgz, the only file left in $OUT, and
    that archive becomes the report's section."""
    try:
        shared_file("vocab/llama3/tokenizer.model")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    root = Path(__file__).resolve().parents[2]
    out, work = tmp_path / "out", tmp_path / "work"
    env = {
        **os.environ,
        "OUT": str(out),
        "WORK": str(work),
        "PROJECT": str(root),
        "LOOP_MODEL": "tiny",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    done = subprocess.run(
        ["bash", str(root / "benchmarks" / "gpu" / "check.sh"), "passes"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "passes: exit 0" in done.stdout
    assert [p.name for p in out.iterdir()] == [gpu.ARCHIVE]
    gpu.take(out, tmp_path / "bench")
    assert sorted(p.name for p in (tmp_path / "bench" / "gpu").iterdir()) == [
        "env.txt",
        "passes.json",
    ]
    assert "### A forward pass by its width" in (tmp_path / "bench" / "REPORT.md").read_text()
