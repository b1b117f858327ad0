"""``python -m constrain_bench`` (``nox -s bench``): run the comparison and
write the report.

    python -m constrain_bench --quick          # about a minute or three
    python -m constrain_bench                  # the full run
    python -m constrain_bench --vocab small --vocab path/to/tokenizer.json

Stages: the pytest-benchmark file ``bench_compare.py`` (compile, per-step
masks, the decoding loop, scaling) in a subprocess, then MaskBench (one
worker process per backend, per-schema timeout), then ``REPORT.md``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import gpu, report
from . import workloads as wl


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="constrain-bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer workloads, rounds and sizes")
    p.add_argument(
        "--vocab",
        action="append",
        default=[],
        help="small, llama3, llama2, mistral-v3, a tokenizer file, or a transformers "
        "tokenizer name (repeatable; default: small plus llama3 when ../shared has it)",
    )
    p.add_argument("--backend", action="append", default=[], help="default: all installed")
    p.add_argument("--out", default="docs/bench", help="report folder (default docs/bench)")
    p.add_argument("--maskbench", default=None, help="MaskBench data folder (default: shared)")
    p.add_argument("--maskbench-limit", type=int, default=None, help="schemas (quick 20, full 100)")
    p.add_argument("--maskbench-timeout", type=float, default=None, help="seconds per schema")
    p.add_argument("--no-maskbench", action="store_true", help="skip the MaskBench stage")
    p.add_argument("--no-micro", action="store_true", help="skip the pytest-benchmark stage")
    p.add_argument("--select", default=None, help="pytest -k expression for the first stage")
    p.add_argument(
        "--loop-model",
        default=None,
        help="the end-to-end stage's model: tiny (the default, the embedded tiny_model) or "
        "a published shape with random weights (llama-3.2-1b, llama-3.2-3b, llama-3.1-8b), "
        "on CUDA when present",
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="write the report again from the raw results of the last run (OUT/raw)",
    )
    return p


def _default_vocabularies() -> list[str]:
    names = ["small"]
    try:
        wl.load_vocabulary("llama3")
        names.append("llama3")
    except FileNotFoundError:
        pass
    return names


def _micro(args, vocabs: list[str], raw: Path) -> tuple[dict, list]:
    bench_file = Path(__file__).with_name("bench_compare.py")
    env = dict(
        os.environ,
        CONSTRAIN_BENCH_VOCABS=",".join(vocabs),
        CONSTRAIN_BENCH_BACKENDS=",".join(args.backend),
        CONSTRAIN_BENCH_QUICK="1" if args.quick else "",
        CONSTRAIN_BENCH_REFUSALS=str(raw / "refusals.json"),
    )
    if args.loop_model:
        env["CONSTRAIN_BENCH_LOOP_MODEL"] = args.loop_model
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(bench_file),
        "--benchmark-only",
        f"--benchmark-json={raw / 'bench.json'}",
        "--benchmark-save-data",
        "--benchmark-columns=median,iqr,rounds",
        "-p",
        "no:cacheprovider",
        "-q",
        "-rs",
        *(["-k", args.select] if args.select else []),
    ]
    print("stage 1/3: pytest-benchmark —", " ".join(cmd[2:5]), flush=True)
    code = subprocess.call(cmd, env=env)
    if code not in (0, 5):
        raise SystemExit(f"the benchmark stage failed (pytest exit code {code})")
    if code == 5 or not (raw / "bench.json").exists():  # (pytest-benchmark wrote nothing)
        chosen = f"--select {args.select!r}" if args.select else "the backends and workloads"
        raise SystemExit(
            f"the benchmark stage ran no benchmark ({chosen} matched none, or all were skipped)"
        )
    bench = json.loads((raw / "bench.json").read_text())
    refusals_file = raw / "refusals.json"
    refusals = json.loads(refusals_file.read_text()) if refusals_file.exists() else []
    return bench, refusals


def _maskbench(args, vocab: str) -> dict:
    from rich.progress import Progress

    from .maskbench import run_maskbench, summarize

    data = Path(args.maskbench) if args.maskbench else None
    if data is None:
        try:
            from constrain_api import shared

            data = shared.shared_file("maskbench/data")
        except FileNotFoundError as e:
            print(f"stage 2/3: MaskBench skipped ({e})")
            return {}
    limit = args.maskbench_limit or (20 if args.quick else 100)
    timeout = args.maskbench_timeout or (20.0 if args.quick else 30.0)
    import constrain_api as ca

    caps = {info.name: info.capabilities for info in ca.available()}
    backends = [  # a backend whose capabilities exclude JSON Schema has no row to fill
        b
        for b in (args.backend or wl.selected_backends())
        if b in caps and caps[b].supports("json_schema")
    ]
    with Progress() as progress:
        task = progress.add_task(
            f"stage 2/3: MaskBench ({limit} schemas × {len(backends)} backends, {vocab})",
            total=limit * len(backends),
        )
        results = run_maskbench(
            backends,
            vocab,
            data,
            limit=limit,
            timeout_s=timeout,
            progress=lambda _r: progress.advance(task),
        )
    return {
        "meta": {"schemas": limit, "data": str(data), "vocab": vocab, "timeout_s": timeout},
        "summary": summarize(results),
        "results": [  # (a schema's steps left out, its slowest kept)
            r.__dict__ | {"tbm_us": None, "tbm_max_us": max(r.tbm_us, default=None)}
            for r in results
        ],
    }


def main(argv: list[str] | None = None) -> int:
    """Run the stages and write the report; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.loop_model not in (None, "tiny"):
        from constrain_api.decoding import MODEL_SHAPES

        if args.loop_model not in MODEL_SHAPES:
            parser.error(f"--loop-model: tiny or one of {', '.join(MODEL_SHAPES)}")
    if args.report_only:
        return _report_only(Path(args.out))
    start = time.perf_counter()
    vocabs = args.vocab or _default_vocabularies()
    out = Path(args.out)
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    bench, refusals = ({}, []) if args.no_micro else _micro(args, vocabs, raw)
    maskbench = {}
    if not args.no_maskbench:
        maskbench = _maskbench(args, "llama3" if "llama3" in vocabs else vocabs[0])
        (raw / "maskbench.json").write_text(json.dumps(maskbench, indent=1))
    run = {
        "command": ("python -m constrain_bench " + " ".join(argv or sys.argv[1:])).strip(),
        "seconds": time.perf_counter() - start,
        "quick": args.quick,
        "date": datetime.date.today().isoformat(),
        "machine_info": report.machine(),  # (what measured: --report-only may run elsewhere)
    }
    (raw / "run.json").write_text(json.dumps(run, indent=1))
    results = report.Results(bench, refusals, maskbench)
    path = report.write(out, results, **run, extra=gpu.section(out / "gpu"))
    print(f"stage 3/3: report written to {path}")
    return 0


def _report_only(out: Path) -> int:
    raw = out / "raw"

    def load(name: str, default):
        file = raw / name
        return json.loads(file.read_text()) if file.exists() else default

    run = load("run.json", None)
    if run is None:
        raise SystemExit(f"{raw / 'run.json'} is missing: run the benchmarks first")
    results = report.Results(
        load("bench.json", {}), load("refusals.json", []), load("maskbench.json", {})
    )
    print(f"report written to {report.write(out, results, **run, extra=gpu.section(out / 'gpu'))}")
    return 0
