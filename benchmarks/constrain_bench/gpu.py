"""The report's GPU section: the figures of a device run
(``benchmarks/gpu/check.sh``; benchmarks/README.md, "On a GPU"), kept
beside the report so every later report shows them.

    python -m constrain_bench.gpu RUN [--out docs/bench]

copies the run's files (``RUN`` is the check's ``$OUT`` as the device tool
brings it back: ``run.tgz``, the archive the check packs after each part,
or that archive itself, or a folder of the files unpacked: ``env.txt``,
``apply.json``, ``passes.json``, ``fills.json`` and the loop stage's
``bench/raw/``) into ``OUT/gpu/`` and writes :func:`section` into
``OUT/REPORT.md`` in place of the one there (appended where there is none).
``python -m constrain_bench`` writes the section again from ``OUT/gpu/``, so
a CPU run keeps the last device run's figures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

from . import report

HEADING = "## On a GPU"
#: The run's files the section reads; the loop stage's raw results go to ``loop/``.
FILES = ("env.txt", "apply.json", "passes.json", "fills.json")
LOOP_FILES = ("bench.json", "refusals.json")
#: What ``check.sh`` packs its parts' files into (the device tool returns 8 files at most).
ARCHIVE = "run.tgz"


def take(run: Path, out: Path) -> Path:
    """Copy ``run``'s files into ``out/gpu/`` (the last run's are replaced)
    and write the section into ``out/REPORT.md``; returns the report's path.
    ``run`` is a folder of the files, or :data:`ARCHIVE` (or a folder holding
    it), unpacked first. ``SystemExit`` when ``run`` holds none of them."""
    archive = run / ARCHIVE if run.is_dir() else run
    if archive.is_file():
        with tempfile.TemporaryDirectory() as unpacked:
            with tarfile.open(archive, "r:gz") as tar:
                tar.extractall(unpacked, filter="data")  # (no path leaves the folder)
            return _take(Path(unpacked), out)
    return _take(run, out)


def _take(run: Path, out: Path) -> Path:
    found = [name for name in FILES if (run / name).is_file()]
    loop = [name for name in LOOP_FILES if (run / "bench" / "raw" / name).is_file()]
    if not found and "bench.json" not in loop:
        raise SystemExit(
            f"{run} holds none of a device run's files ({', '.join(FILES)}, bench/raw/bench.json)"
        )
    folder = out / "gpu"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name in found:
        shutil.copyfile(run / name, folder / name)
    if "bench.json" in loop:
        (folder / "loop").mkdir()
        for name in loop:
            shutil.copyfile(run / "bench" / "raw" / name, folder / "loop" / name)
    path = out / "REPORT.md"
    text = path.read_text() if path.exists() else "# Throughput report\n"
    path.write_text(with_section(text, section(folder)))
    return path


def with_section(text: str, lines: list[str]) -> str:
    """The report ``text`` with its GPU section (from :data:`HEADING` to the
    next level-2 heading) replaced by ``lines``, or ``lines`` appended."""
    kept = text.rstrip("\n").split("\n")
    if HEADING in kept:
        start = kept.index(HEADING)
        end = next((i for i in range(start + 1, len(kept)) if kept[i].startswith("## ")), None)
        tail = kept[end:] if end is not None else []
        kept = kept[:start] + (lines + tail if lines else tail)
    elif lines:
        kept = [*kept, "", *lines]
    return "\n".join(kept).rstrip() + "\n"


def section(folder: Path) -> list[str]:
    """The GPU section from ``folder``'s files (``[]`` where it has none)."""
    if not folder.is_dir():
        return []
    parts = [
        _apply(folder / "apply.json"),
        _passes(folder / "passes.json"),
        _fills(folder / "fills.json"),
        _loop(folder / "loop"),
    ]
    body = [line for part in parts for line in part]
    if not body:
        return []
    gpu, date, versions = _env(folder / "env.txt")
    return [
        HEADING,
        "",
        f"Measured by `benchmarks/gpu/check.sh` on {gpu} ({date}; {versions}); the run's files "
        f"are in `{folder.name}/` beside this report and `python -m constrain_bench.gpu RUN` "
        'replaces them (benchmarks/README.md, "On a GPU").',
        "",
        *body,
    ]


def _env(path: Path) -> tuple[str, str, str]:
    """(GPU name, date, versions) from the check's ``env.txt``."""
    gpu, date, versions = "a GPU not recorded", "date not recorded", "versions not recorded"
    if path.is_file():
        lines = [line.strip() for line in path.read_text().splitlines() if line.strip()]
        for i, line in enumerate(lines):
            if line.startswith("name,") and i + 1 < len(lines):
                gpu = lines[i + 1].split(",")[0].strip()
            elif line.startswith("date "):
                date = line.removeprefix("date ").strip()
            elif line.startswith("torch "):
                versions = line
    return gpu, date, versions


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def _apply(path: Path) -> list[str]:
    data = _load(path)
    if not data or not data.get("benchmarks"):
        return []
    cells: dict[tuple[int, str], dict[str, float]] = {}
    for b in data["benchmarks"]:
        p = b["params"]
        cells.setdefault((p["batch"], p["dtype"]), {})[p["how"]] = b["stats"]["median"]
    rows = []
    for (batch, dtype), how in sorted(cells.items()):
        figures = [
            f"{how[h] * 1e6:,.1f}" if h in how else "—" for h in ("kernel", "torch", "xgrammar")
        ]
        ratio = (
            f"{how['kernel'] / how['xgrammar']:.2f}"
            if {"kernel", "xgrammar"} <= how.keys()
            else "—"
        )
        rows.append([str(batch), dtype, *figures, ratio])
    return [
        "### Applying a bitmask on the GPU (µs a call, median)",
        "",
        "`apply_bitmask_` on Llama-3-wide logits (128,256) and a random half of the tokens "
        "allowed, each call followed by a synchronize (`benchmarks/bench_masks.py -k cuda`): "
        "the fused Triton kernel, the torch path (`CONSTRAIN_APPLY=torch`) and XGrammar's "
        "`apply_token_bitmask_inplace`.",
        "",
        *report.table(
            ["batch", "dtype", "fused kernel", "torch path", "XGrammar", "kernel ÷ XGrammar"], rows
        ),
    ]


def _passes(path: Path) -> list[str]:
    data = _load(path)
    if not data or not data.get("rows"):
        return []
    base = {r["batch"]: r["device_ms"] for r in data["rows"] if r["width"] == 1 and not r["holes"]}
    rows = [
        [
            str(r["batch"]),
            str(r["width"]),
            "yes" if r["holes"] else "no",
            f"{r['device_ms']:.2f}",
            f"{r['host_ms']:.2f}",
            f"{r['device_ms'] / base[r['batch']]:.2f}×" if r["batch"] in base else "—",
        ]
        for r in data["rows"]
    ]
    return [
        "### A forward pass by its width",
        "",
        f"`benchmarks/gpu/passes.py`, `{data.get('model')}` on {data.get('device')}: one pass "
        "of the loop's model after a cached prompt, tokens a row, with or without a hole in "
        "the attention mask; the device's time (CUDA events) and the host's (the call): where "
        "they are close the pass is bound by its launches, and masks filled after the call "
        "are not hidden by it. Medians in ms; the ratio to one token a row without a hole.",
        "",
        *report.table(["batch", "tokens a row", "hole", "device", "host", "÷ one token"], rows),
    ]


def _fills(path: Path) -> list[str]:
    data = _load(path)
    if not data or not data.get("rows"):
        return []
    looped = all("loop_ratio" in r for r in data["rows"])
    columns = ["serial", "parallel", "forward", "beside_serial", "beside_parallel"]
    rows = []
    for r in data["rows"]:
        row = [f"`{r['workload']}`", str(r["batch"]), *[f"{r[c]:,.0f}" for c in columns]]
        if looped:
            row.append(
                f"{r['loop_calling_tps']:,.0f} → {r['loop_beside_tps']:,.0f} "
                f"({r['loop_ratio']:.2f}×)"
            )
        rows.append(row)
    loop_note = (
        " Last column: the loop end to end (tokens/s) with the masks filled on the calling "
        "thread → in its worker thread beside the pass (`fill_beside_forward`), the median "
        "of the pairs' ratios."
        if looped
        else ""
    )
    threads = data.get("threads") or "the pool's default"
    return [
        "### `llguidance`'s masks beside the forward pass",
        "",
        f"`benchmarks/gpu/fills.py`, `{data.get('model')}` on {data.get('device')}: a batch's "
        "masks at new points of the workload's document, row by row (*serial*) and in "
        f"llguidance's parallel fill on {threads} threads (*parallel*); one forward pass; and "
        "each fill in a worker thread started as the pass is queued (*beside*: near the "
        "longer of the two where the fill hides, near their sum where it does not). Medians "
        f"in µs.{loop_note}",
        "",
        *report.table(
            [
                "workload",
                "batch",
                "serial",
                "parallel",
                "forward",
                "beside (serial)",
                "beside (parallel)",
                *(["loop: calling → beside"] if looped else []),
            ],
            rows,
        ),
    ]


def _loop(folder: Path) -> list[str]:
    bench = _load(folder / "bench.json")
    if not bench:
        return []
    refusals = _load(folder / "refusals.json") or []
    results = report.Results(bench, refusals)
    lines: list[str] = []
    for vocab in results.vocabularies():
        lines += report.loop_sections(results, vocab)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m constrain_bench.gpu", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "run",
        help="the device run's $OUT as it came back (its run.tgz), the archive, or its files",
    )
    parser.add_argument("--out", default="docs/bench", help="report folder (default docs/bench)")
    args = parser.parse_args(argv)
    path = take(Path(args.run), Path(args.out))
    print(f"GPU section written to {path} (files in {Path(args.out) / 'gpu'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
