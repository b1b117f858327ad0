"""The comparison report: pytest-benchmark's JSON (with per-call data), the
refusals and the MaskBench summary → ``REPORT.md`` and PNG plots."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np

from .maskbench import STALL_MS, STATUSES

#: Distributions whose versions the report records.
VERSIONS = (
    "constrain-api",
    "constrain-naive",
    "constrain-fsm",
    "constrain-fst",
    "constrain-llguidance",
    "constrain-xgrammar",
    "outlines-core",
    "pynini",
    "llguidance",
    "xgrammar",
    "lark",
    "torch",
    "transformers",
    "tokenizers",
    "pytest-benchmark",
)


#: The widest vector extension of a CPU, by its /proc/cpuinfo flag, widest first.
_VECTOR_FLAGS = (("avx512f", "avx512"), ("avx2", "avx2"), ("avx", "avx"), ("asimd", "neon"))


def machine(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, str]:
    """CPU (with its widest vector extension: the same name may stand for
    CPUs whose tensor arithmetic differs twofold), cores, memory, GPU and
    versions of what was measured."""
    cpu = platform.processor() or platform.machine()
    fields: dict[str, str] = {}  # (the first processor's)
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    cpu = fields.get("model name", cpu)
    flags = set(fields.get("flags", fields.get("Features", "")).split())
    vector = next((name for flag, name in _VECTOR_FLAGS if flag in flags), None)
    info = {
        "cpu": f"{cpu} ({vector})" if vector else cpu,
        "cores": str(os.cpu_count()),
        "memory": f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB",
        "python": platform.python_version(),
        "gpu": "none",
    }
    try:
        import torch

        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    for dist in VERSIONS:
        try:
            info[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return info


def _pct(data, q) -> float:
    return float(np.percentile(np.asarray(data, dtype=float), q))


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f}" if seconds < 10 else f"{seconds * 1e3:,.0f}"


def _us(seconds: float) -> str:
    value = seconds * 1e6
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table (and the blank line after it)."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return [*out, ""]


class Results:
    """The raw results, indexed by test, vocabulary, backend and workload."""

    def __init__(self, bench: dict, refusals: list[dict], maskbench: dict | None = None):
        self.bench = bench
        self.by_test: dict[str, list[dict]] = defaultdict(list)
        for b in bench.get("benchmarks", []):
            self.by_test[b["name"].split("[")[0]].append(b)
        self.refusals = {(r["test"], r["backend"], r["workload"], r["vocab"]): r for r in refusals}
        self.refusal_list = refusals  # (the loop's are per batch too)
        self.maskbench = maskbench or {}

    def backends(self) -> list[str]:
        found = {
            b["params"]["backend"]
            for v in self.by_test.values()
            for b in v
            if "backend" in b["params"]
        }
        return sorted(found)

    def cells(self, test: str, vocab: str) -> dict[tuple[str, str], dict]:
        """(workload, backend) → benchmark entry, for one test and vocabulary."""
        out = {}
        for b in self.by_test.get(test, []):
            p = b["params"]
            if p.get("vocab") == vocab or b["extra_info"].get("vocab") == vocab:
                out[(p.get("workload"), p.get("backend"))] = b
        return out

    def vocabularies(self) -> list[str]:
        seen: list[str] = []
        for test in ("test_compile", "test_mask_step", *LOOP_TESTS):
            for b in self.by_test.get(test, []):
                v = b["params"].get("vocab")
                if v and v not in seen:
                    seen.append(v)
        return seen

    def refusal(self, test: str, backend: str, workload: str, vocab_name: str) -> str | None:
        for (t, b, w, v), r in self.refusals.items():
            if t == test and b == backend and w == workload and v == vocab_name:
                return r["error"]


def _matrix(results: Results, test: str, vocab: str, workloads: list[str], fmt) -> list[str]:
    cells = results.cells(test, vocab)
    backends = results.backends()
    rows = []
    for w in workloads:
        row = [f"`{w}`"]
        for backend in backends:
            entry = cells.get((w, backend))
            if entry is not None:
                row.append(fmt(entry))
            else:
                refused = results.refusal("compile", backend, w, vocab)
                row.append(f"refused ({refused})" if refused else "—")
        rows.append(row)
    return table(["workload", *[f"`{b}`" for b in backends]], rows)


def _compile_cell(entry: dict) -> str:
    s = entry["stats"]
    spread = f" ({_ms(s['min'])}–{_ms(s['max'])})" if s["rounds"] > 1 else ""
    return f"{_ms(s['median'])}{spread}"


def _step_cell(entry: dict) -> str:
    data = entry["stats"]["data"]
    cut = entry["extra_info"].get("rejected_at")
    mark = f" (rejected the document at step {cut})" if cut is not None else ""
    figures = " / ".join(_us(_pct(data, q)) for q in (50, 90, 99, 100))
    return f"{figures}{mark}"


def _workloads(results: Results, test: str, vocab: str) -> list[str]:
    names: list[str] = []
    for w, _b in results.cells(test, vocab):
        if w not in names:
            names.append(w)
    return names


def write(
    out: Path,
    results: Results,
    *,
    command: str,
    seconds: float,
    quick: bool,
    date: str | None = None,
    machine_info: dict[str, str] | None = None,
    extra: list[str] | None = None,
) -> Path:
    """Write ``out/REPORT.md`` and its plots, ``extra`` lines last (the GPU
    section); returns the report's path. ``date`` and ``machine_info``: when
    and on what the results were measured (a run records them; by default
    today and this machine)."""
    out.mkdir(parents=True, exist_ok=True)
    info = machine_info or machine()
    date = date or datetime.date.today().isoformat()
    lines = [
        "# Throughput report",
        "",
        f"Produced by `{command}` on {date} in "
        f"{seconds / 60:.1f} min ({'quick' if quick else 'full'} mode).",
        "",
        "Machine: "
        + ", ".join(f"{k} {v}" for k, v in info.items() if k in ("cpu", "cores", "memory", "gpu"))
        + ".",
        "Versions: "
        + ", ".join(
            f"{k} {v}" for k, v in info.items() if k not in ("cpu", "cores", "memory", "gpu")
        )
        + ".",
        "",
        "How to read it: every backend runs the same workloads on the same vocabularies and "
        "the same decoding loop. Times are medians over repeated runs with the range in "
        "parentheses; per-step figures are percentiles over every `fill_mask` call along a "
        "valid document's tokens (first visits included, so p99 shows lazily built rows). "
        "*refused (…)* means the backend raised that error for the workload (a limit or an "
        "unsupported construct); — means its capabilities exclude the kind. Exactness is not "
        "measured here: docs/conformance.md says which backends' masks equal the oracle's.",
        "",
    ]
    for vocab in results.vocabularies():
        workloads = _workloads(results, "test_compile", vocab) or _workloads(
            results, "test_mask_step", vocab
        )
        lines += [f"## Vocabulary `{vocab}`", ""]
        if workloads:  # (a run of the loop stages alone has none)
            lines += ["### Time to first mask (ms)", ""]
            lines += [
                "Compile plus the first `fill_mask` on a fresh backend whose per-vocabulary "
                "set-up is already built (that set-up is in the next table).",
                "",
            ]
            lines += _matrix(results, "test_compile", vocab, workloads, _compile_cell)
            lines += _setup_table(results, vocab)
            lines += ["### Per-step `fill_mask` (µs, p50 / p90 / p99 / max)", ""]
            lines += _matrix(results, "test_mask_step", vocab, workloads, _step_cell)
        lines += loop_sections(results, vocab)
    lines += _maskbench_section(results)
    lines += _scaling_section(results, out)
    lines += extra or []
    path = out / "REPORT.md"
    path.write_text("\n".join(lines).rstrip() + "\n")
    return path


def loop_sections(results: Results, vocab: str) -> list[str]:
    """The decoding loop's tables for one vocabulary: end to end by batch
    size with the phase split, and speculative drafts."""
    return _loop_table(results, vocab) + _speculative_table(results, vocab)


def _setup_table(results: Results, vocab: str) -> list[str]:
    rows = []
    per_backend: dict[str, list[dict]] = defaultdict(list)
    for (_w, backend), entry in results.cells("test_compile", vocab).items():
        per_backend[backend].append(entry["extra_info"])
    for backend in sorted(per_backend):
        infos = per_backend[backend]
        pre = min(i.get("precompute_s", 0.0) for i in infos)
        rss = [i["rss_delta_kib"] for i in infos if "rss_delta_kib" in i]
        traced = [i["traced_kib"] for i in infos if "traced_kib" in i]
        rows.append(
            [
                f"`{backend}`",
                _ms(pre),
                f"{int(np.median(rss)):,}" if rss else "—",
                f"{max(rss):,}" if rss else "—",
                f"{int(np.median(traced)):,}" if traced else "—",
            ]
        )
    if not rows:
        return []
    return [
        "Per-vocabulary set-up (the first compile of a fresh backend, with a one-character "
        "regex) and memory of the compiled artifact over the workloads (RSS growth, native "
        "allocations included; traced: Python allocations only, full mode).",
        "",
        *table(
            [
                "backend",
                "set-up (ms)",
                "RSS Δ median (KiB)",
                "RSS Δ max (KiB)",
                "traced median (KiB)",
            ],
            rows,
        ),
    ]


#: the end-to-end stages: a run of them alone still reports its vocabularies
LOOP_TESTS = ("test_loop_unconstrained", "test_loop", "test_loop_speculative")


def _batch(entry: dict) -> int:
    """The batch of a loop entry (4 in runs from before batches were a parameter)."""
    return int(entry["params"].get("batch") or entry["extra_info"].get("batch") or 4)


def _loop_entries(results: Results, test: str, vocab: str) -> list[dict]:
    """The entries of one loop stage on ``vocab`` (named by parameter, or
    by ``extra_info`` in runs that did not parametrize the vocabulary)."""
    return [
        b
        for b in results.by_test.get(test, [])
        if b["params"].get("vocab") == vocab or b["extra_info"].get("vocab") == vocab
    ]


def _loop_table(results: Results, vocab: str) -> list[str]:
    base = {_batch(b): b for b in _loop_entries(results, "test_loop_unconstrained", vocab)}
    entries = _loop_entries(results, "test_loop", vocab)
    skipped = [r for r in results.refusal_list if r["test"] == "loop" and r["vocab"] == vocab]
    if not base or not (entries or skipped):
        return []
    lines: list[str] = []
    by_batch = {batch: [b for b in entries if _batch(b) == batch] for batch in base}
    unconstrained = {batch: _unconstrained(base[batch], by_batch[batch]) for batch in base}
    for batch in sorted(base):
        lines += _loop_batch(unconstrained[batch], by_batch[batch], [
            r for r in skipped if r.get("batch", batch) == batch
        ])  # fmt: skip
    lines += _phase_table(unconstrained, entries)
    return lines


def _unconstrained(base: dict, entries: list[dict]) -> dict:
    """The unconstrained loop at one batch size, as the report shows it: from
    the unconstrained runs paired with the constrained ones (``entries``:
    the median over the cells of each cell's median, and the cells' range),
    which ran in the same minutes as what they are compared with, rather
    than from the unconstrained stage (``base``), which ran once, before
    them; its figures where the pairs did not record theirs (older runs)."""
    info = dict(base["extra_info"])
    speeds = [b["extra_info"]["unconstrained_tokens_per_s"] for b in entries
              if "unconstrained_tokens_per_s" in b["extra_info"]]  # fmt: skip
    if speeds:
        info.update(tokens_per_s=statistics.median(speeds), paired=(min(speeds), max(speeds)))
    phases = [b["extra_info"] for b in entries if "unconstrained_per_pass_s" in b["extra_info"]]
    if phases:
        info["per_pass_s"] = {
            p: statistics.median(e["unconstrained_per_pass_s"][p] for e in phases)
            for p in phases[0]["unconstrained_per_pass_s"]
        }
        info["share"] = statistics.median(e["unconstrained_share"] for e in phases)
        info["paired_phases"] = True
    return {**base, "extra_info": info}


def _loop_batch(base: dict, entries: list[dict], skipped: list[dict]) -> list[str]:
    """One batch size's table; ``base``: the unconstrained loop (:func:`_unconstrained`)."""
    info = base["extra_info"]
    unconstrained = info["tokens_per_s"]
    paired = (
        f" (the median of the unconstrained runs paired with the cells below; "
        f"{info['paired'][0]:,.0f}–{info['paired'][1]:,.0f} from cell to cell)"
        if "paired" in info
        else ""
    )
    cells = {(b["params"]["workload"], b["params"]["backend"]): b for b in entries}
    refused = {(r["workload"], r["backend"]): r["reason"] for r in skipped}
    backends = sorted({b for _w, b in [*cells, *refused]})
    workloads = sorted({w for w, _b in [*cells, *refused]})
    batch = _batch(base)

    def cell(w: str, b: str) -> str:
        if (w, b) in cells:
            e = cells[(w, b)]["extra_info"]
            ratio = e.get("ratio", e["tokens_per_s"] / unconstrained)
            spread = f", {e['ratio_min']:.2f}–{e['ratio_max']:.2f}" if "ratio_min" in e else ""
            return f"{e['tokens_per_s']:,.0f} ({ratio:.2f}×{spread})"
        if (w, b) in refused:
            return f"skipped ({refused[(w, b)]})"
        return "—"

    rows = [[f"`{w}`"] + [cell(w, b) for b in backends] for w in workloads]
    model = info.get("model", "tiny")
    what = "the embedded `tiny_model`" if model == "tiny" else f"`{model}` shapes"
    decoder = "argmax" if "model" in info else "sampling"  # (runs before batches sampled)
    return [
        f"### End to end: tokens/s on the shared loop, batch {batch} (ratio to unconstrained)",
        "",
        f"Random weights, {what}, on {info.get('device', 'cpu')}; {batch} sequence"
        f"{'s' if batch > 1 else ''}, {decoder}, 48 tokens at most; unconstrained: "
        f"{unconstrained:,.0f} tokens/s{paired}. Each round runs the loop unconstrained and "
        "constrained on the same prompts, back to back, which first alternating from round "
        f"to round ({_rounds(entries)}); the ratio is the median of the rounds' ratios "
        "(their range after the comma), the backend's cost on this model. *skipped (…)*: the "
        "loop's masks alone, projected from the first masks along the workload's document, "
        "would exceed the budget (`$CONSTRAIN_BENCH_LOOP_BUDGET_S`, 120 s by default).",
        "",
        *table(["workload", *[f"`{b}`" for b in backends]], rows),
    ]


def _rounds(entries: list[dict]) -> str:
    """How many rounds the entries ran (``"4 rounds"``, a range where they
    differ; runs before it was recorded: ``"rounds not recorded"``)."""
    counts = sorted({b["extra_info"]["rounds"] for b in entries if "rounds" in b["extra_info"]})
    if not counts:
        return "rounds not recorded"
    low, high = counts[0], counts[-1]
    return f"{low}–{high} rounds" if low != high else f"{low} round{'s' if low > 1 else ''}"


def _spread_kind(entries: list[dict]) -> str:
    """Which spread every speculative cell of a table shows: the 95 %
    interval of its median speed-up (``speedup_interval``) where every entry
    recorded it, else the middle half of the rounds' ratios
    (``speedup_quartiles``), else their range (older raw results)."""
    for kind in ("speedup_interval", "speedup_quartiles"):
        if all(kind in b["extra_info"] for b in entries):
            return kind
    return "range"


def _spread(info: dict, kind: str) -> str:
    """A speculative case's spread of this :func:`_spread_kind`."""
    low, high = (info["speedup_min"], info["speedup_max"]) if kind == "range" else info[kind]
    return f"{low:.2f}–{high:.2f}"


def _spread_means(entries: list[dict], kind: str) -> str:
    """What :func:`_spread` of ``kind`` shows, in the table's paragraph."""
    if kind == "speedup_interval":
        recorded = (b["extra_info"].get("speedup_precision") for b in entries)
        precision = next((p for p in recorded if p is not None), 0.02)  # (its first value)
        return (
            "in parentheses, the 95 % interval of that median: a case goes on, up to its time, "
            f"until it is within ±{precision * 100:g} % of it"
        )
    if kind == "speedup_quartiles":
        return "in parentheses, the middle half of the rounds' ratios"
    return "in parentheses, the range of the rounds' ratios"


def _speculative_table(results: Results, vocab: str) -> list[str]:
    """The loop with speculative drafts against the same loop without them."""
    entries = _loop_entries(results, "test_loop_speculative", vocab)
    skipped = [
        r for r in results.refusal_list if r["test"] == "loop_speculative" and r["vocab"] == vocab
    ]
    if not (entries or skipped):
        return []
    rows, kind = [], _spread_kind(entries)
    for entry in sorted(entries, key=lambda b: (_batch(b), *sorted(b["params"].items()))):
        e, params = entry["extra_info"], entry["params"]
        rows.append(
            [
                str(_batch(entry)),
                f"`{params['workload']}`",
                f"`{params['backend']}`",
                f"{e['plain_tokens_per_s']:,.0f} → {e['tokens_per_s']:,.0f}",
                f"{e['speedup']:.2f}× ({_spread(e, kind)})",
                f"{e['drafted']:,g} / {e['accepted']:,g}",
                f"{e['plain_passes']:,g} → {e['passes']:,g}",
            ]
        )
    for r in skipped:
        where = [str(r.get("batch", "")), f"`{r['workload']}`", f"`{r['backend']}`"]
        rows.append([*where, f"skipped ({r['reason']})", "", "", ""])
    first = entries[0]["extra_info"] if entries else {}
    return [
        "### Speculative drafts: the loop with drafts against the loop without",
        "",
        f"The same loop and model, drafts of up to {first.get('speculative', '?')} tokens "
        "from the checker (`generate(..., speculative=s)`, backends with the `propose` "
        'feature; the default `draft_policy="measured"` feeds a pass\'s drafts only when '
        "their expected advance beats the pass's measured cost, docs/decoding.md), "
        "verified in one forward pass: under argmax the output is the same token "
        "for token (the benchmark checks it). Each round runs the constrained loop without "
        "drafts and with them, back to back, which first alternating from round to round "
        f"({_rounds(entries)}); the speed-up is the median of the rounds' ratios "
        f"({_spread_means(entries, kind)}): below 1, drafts cost more than they save.",
        "",
        *table(
            [
                "batch",
                "workload",
                "backend",
                "tokens/s without → with",
                "speed-up",
                "drafted / accepted",
                "forward passes without → with",
            ],
            rows,
        ),
    ]


def _phase_table(base: dict[int, dict], entries: list[dict]) -> list[str]:
    """Milliseconds per forward pass by phase, and the share of the pass
    beside the forward (everything else ÷ the forward); ``base``: the
    unconstrained loop by batch size (:func:`_unconstrained`)."""
    phases = ("forward", "mask", "apply", "sample", "update", "other")
    rows = []
    ordered = [(batch, "(unconstrained)", "", base[batch]) for batch in sorted(base)]
    ordered += sorted(
        (_batch(b), b["params"]["workload"], b["params"]["backend"], b) for b in entries
    )
    if any(e["extra_info"].get("per_pass_s", {}).get("overlapped") for *_, e in ordered):
        phases += ("overlapped",)  # (masks filled in a worker thread beside the pass)
    for batch, workload, backend, entry in ordered:
        e = entry["extra_info"]
        per_pass = e.get("per_pass_s")
        if not per_pass:
            continue
        name = workload if not backend else f"`{workload}`"
        rows.append(
            [str(batch), name, f"`{backend}`" if backend else "—"]
            + [f"{per_pass.get(p, 0.0) * 1e3:.2f}" for p in phases]
            + [f"{e['share']:.1%}"]
        )
    if not rows:
        return []
    paired = all(b["extra_info"].get("paired_phases") for b in base.values())
    source = (
        "the medians over the cells of the unconstrained runs paired with them"
        if paired
        else "the unconstrained stage, run once before the pairs"
    )
    return [
        "Per forward pass (ms, median over the rounds), and the share of the pass beside the "
        "forward (the loop's own work and the constraint's, ÷ the forward's time); the "
        f"unconstrained rows: {source}"
        + (
            "; *overlapped*: masks filled in the loop's worker thread while the pass ran "
            "(`fill_beside_forward`; `mask` is then the wait for them after it)"
            if "overlapped" in phases
            else ""
        )
        + ":",
        "",
        *table(["batch", "workload", "backend", *phases, "beside the forward"], rows),
    ]


def _maskbench_section(results: Results) -> list[str]:
    summary = results.maskbench.get("summary")
    if not summary:
        return []
    meta = results.maskbench.get("meta", {})
    keys = STATUSES
    outcomes, latency = [], []
    for s in summary:
        name = f"`{s['backend']}`"
        outcomes.append([name, str(s["schemas"]), *[str(s.get(k, 0)) for k in keys]])
        figures = [
            "—" if s.get(k) is None else f"{s[k]:,.1f}"
            for k in (
                "ttfm_p50_ms",
                "ttfm_p90_ms",
                "ttfm_p99_ms",
                "tbm_p50_us",
                "tbm_p99_us",
                "tbm_max_us",
                "slowest_step_p50_ms",
            )
        ]
        walked = s.get("walked")  # (absent from a summary written before it)
        within = "—" if walked is None else f"{s['within_stall']} of {walked}"
        latency.append([name, *figures, within])
    return [
        "## MaskBench",
        "",
        f"{meta.get('schemas', '?')} schemas of {meta.get('data', 'MaskBench')} on the "
        f"`{meta.get('vocab', '?')}` vocabulary, each in a worker process with a "
        f"{meta.get('timeout_s', '?')} s timeout. Instances are spelled as the lowered "
        "language spells them and tokenized by the vocabulary's tokenizer.",
        "",
        *table(["backend", "schemas", *keys], outcomes),
        "Latency over the schemas that compiled. TTFM: time to first mask (building the "
        "spec, compiling it and the first `fill_mask`, for a schema not seen before); TBM: "
        "time between masks (one `fill_mask` and `update` per token, first visits "
        "included); the slowest step: "
        "each schema's slowest TBM, the median schema's, and how many schemas have no "
        f"step over {STALL_MS:g} ms (of those with a step).",
        "",
        *table(
            [
                "backend",
                "TTFM p50 (ms)",
                "TTFM p90 (ms)",
                "TTFM p99 (ms)",
                "TBM p50 (µs)",
                "TBM p99 (µs)",
                "TBM max (µs)",
                "slowest step, median schema (ms)",
                f"no step over {STALL_MS:g} ms",
            ],
            latency,
        ),
    ]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt, fig, ax, path: Path, title: str) -> None:
    """Log-scale y, title, legend, write the PNG."""
    ax.set_yscale("log")
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _scaling_section(results: Results, out: Path) -> list[str]:
    lines: list[str] = []
    vocab_rows = results.by_test.get("test_scaling_vocab", [])
    if vocab_rows:
        plt = _plt()
        fig, ax = plt.subplots(figsize=(6, 4))
        series: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
        for b in vocab_rows:
            key = (b["params"]["backend"], b["params"]["workload"])
            series[key].append((b["extra_info"]["vocab_size"], _pct(b["stats"]["data"], 50)))
        sizes = []
        for (backend, workload), pts in sorted(series.items()):
            pts.sort()
            ax.plot(
                [p[0] for p in pts],
                [p[1] * 1e6 for p in pts],
                marker="o",
                label=f"{backend} · {workload}",
            )
            refused = [
                f"{r['vocab']}: refused ({r['error']})"
                for r in results.refusals.values()
                if r["test"] == "scaling_vocab"
                and r["backend"] == backend
                and r["workload"] == workload
            ]
            sizes.append(
                [
                    f"`{backend}`",
                    f"`{workload}`",
                    *[f"{p[0]:,}: {_us(p[1])}" for p in pts],
                    *refused,
                ]
            )
        ax.set(xscale="log", xlabel="vocabulary size (tokens)", ylabel="fill_mask p50 (µs)")
        _save(plt, fig, ax, out / "scaling_vocab.png", "Per-step mask time against vocabulary size")
        lines += [
            "## Scaling",
            "",
            "### Against vocabulary size",
            "",
            "Random subsets of the Llama-3 vocabulary (every single byte kept), the same "
            "document spelled greedily; p50 of `fill_mask` in steady state (rows built). "
            "Scanning grows with the vocabulary; indexing does not.",
            "",
            "![per-step mask time against vocabulary size](scaling_vocab.png)",
            "",
        ]
        width = max(len(r) for r in sizes)
        lines += table(
            ["backend", "workload", *["size: µs"] * (width - 2)],
            [r + [""] * (width - len(r)) for r in sizes],
        )
    lines += _length_plot(results, out)
    choice = results.by_test.get("test_scaling_constraint", [])
    if choice:
        plt = _plt()
        fig, ax = plt.subplots(figsize=(6, 4))
        series = defaultdict(list)
        for b in choice:
            key = (b["params"]["backend"], b["params"]["vocab"])
            series[key].append((b["params"]["n"], b["stats"]["median"]))
        for (backend, vocab), pts in sorted(series.items()):
            pts.sort()
            ax.plot(
                [p[0] for p in pts],
                [p[1] * 1e3 for p in pts],
                marker="o",
                label=f"{backend} · {vocab}",
            )
        ax.set(xscale="log", xlabel="strings in the choice", ylabel="time to first mask (ms)")
        _save(plt, fig, ax, out / "scaling_constraint.png", "Compile time against constraint size")
        lines += [
            "### Against constraint size",
            "",
            "A choice among n random lowercase strings; time to first mask.",
            "",
            "![compile time against constraint size](scaling_constraint.png)",
            "",
        ]
    return lines


def _length_plot(results: Results, out: Path) -> list[str]:
    """Per-step time against position in the output, from the mask-step data."""
    steps = results.by_test.get("test_mask_step", [])
    vocabs = results.vocabularies()
    if not steps or not vocabs:
        return []
    vocab = "llama3" if "llama3" in vocabs else vocabs[0]
    chosen = [
        b
        for b in steps
        if b["params"].get("vocab") == vocab
        and b["params"].get("workload") in ("domino-json", "koo-json-object")
    ]
    if not chosen:
        return []
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for b in sorted(chosen, key=lambda b: (b["params"]["backend"], b["params"]["workload"])):
        n = b["extra_info"]["steps"]
        data = np.asarray(b["stats"]["data"], dtype=float).reshape(-1, n)
        ax.plot(
            range(n),
            np.median(data, axis=0) * 1e6,
            label=f"{b['params']['backend']} · {b['params']['workload']}",
        )
    ax.set(xlabel="tokens generated so far", ylabel="fill_mask (µs, median over passes)")
    title = f"Per-step mask time against output length ({vocab})"
    _save(plt, fig, ax, out / "scaling_length.png", title)
    return [
        "### Against output length",
        "",
        f"`fill_mask` at each position of the workload's document on `{vocab}`: constant for "
        "automata, growing where a parser's state grows.",
        "",
        "![per-step mask time against output length](scaling_length.png)",
        "",
    ]
