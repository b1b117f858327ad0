"""The report command end to end on the small vocabulary (the first stage
restricted with ``--select`` to stay fast), and the report's reading of refusals."""

from __future__ import annotations

import json
import re
import time

import pytest
from constrain_bench import cli, report


def _quick_small_run(out, backends: list[str], select: str) -> int:
    """``constrain_bench --quick`` on the small vocabulary, no MaskBench stage."""
    chosen = [arg for backend in backends for arg in ("--backend", backend)]
    rest = ["--select", select, "--no-maskbench", "--out", str(out)]
    return cli.main(["--quick", "--vocab", "small", *chosen, *rest])


def test_quick_run_writes_a_report_with_every_selected_backend(tmp_path):
    out = tmp_path / "bench"
    select = "koo-iso-date-time or domino-json or unconstrained or scaling_constraint"
    code = _quick_small_run(out, ["naive", "fsm"], select)
    assert code == 0
    text = (out / "REPORT.md").read_text()
    bench = json.loads((out / "raw" / "bench.json").read_text())
    names = {b["name"] for b in bench["benchmarks"]}
    # every selected backend measured on the regex workload and the grammar
    for test in ("test_compile", "test_mask_step"):
        assert f"{test}[small-naive-koo-iso-date-time]" in names
        assert f"{test}[small-fsm-koo-iso-date-time]" in names
    for batch in (1, 4):  # the loop at batch 1 and 4 (quick; 1 and 16 in full)
        assert f"test_loop[small-naive-koo-iso-date-time-{batch}]" in names
        assert f"test_loop[small-fsm-koo-iso-date-time-{batch}]" in names
    loop = next(b for b in bench["benchmarks"] if b["name"].startswith("test_loop[small-fsm"))
    info = loop["extra_info"]  # paired with the unconstrained loop, phase by phase
    assert info["ratio_min"] <= info["ratio"] <= info["ratio_max"]
    assert info["per_pass_s"]["forward"] > 0 and info["share"] > 0
    assert info["unconstrained_per_pass_s"]["forward"] > 0 and info["unconstrained_share"] > 0
    assert "tokens/s (the median of the unconstrained runs paired with the cells below;" in text
    assert info["model"] == "tiny" and info["device"] in ("cpu", "cuda:0")
    assert info["rounds"] == 1 and "(1 round);" in text
    assert "test_compile[small-naive-domino-json]" in names
    assert "test_compile[small-fsm-domino-json]" in names
    steps = next(b for b in bench["benchmarks"] if b["name"].startswith("test_mask_step[small-fsm"))
    assert len(steps["stats"]["data"]) == steps["extra_info"]["steps"]  # one round per call
    assert "| `fsm` | `naive` |" in text and "`koo-iso-date-time`" in text
    # fsm's grammars never allow a token spanning two terminals (`{"`): the
    # report says where it stopped following the document, it does not hide it
    [row] = [
        line for line in text.splitlines() if line.startswith("| `domino-json` |") and "/" in line
    ]
    assert row.count("(rejected the document at step 0)") == 1
    assert "End to end" in text and "×, " in text
    assert "batch 1 (ratio" in text and "batch 4 (ratio" in text
    assert "| 4 | `koo-iso-date-time` | `fsm` |" in text  # the phases per forward pass
    assert (out / "scaling_constraint.png").stat().st_size > 1000
    # the report can be written again from the raw results alone
    (out / "REPORT.md").unlink()
    assert cli.main(["--report-only", "--out", str(out)]) == 0
    assert (out / "REPORT.md").read_text().splitlines()[2:] == text.splitlines()[2:]


def test_refused_cells_name_the_error():
    bench = {
        "benchmarks": [
            {
                "name": "test_compile[small-naive-w]",
                "params": {"vocab": "small", "backend": "naive", "workload": "w"},
                "extra_info": {"precompute_s": 0.001, "rss_delta_kib": 4},
                "stats": {"median": 0.002, "min": 0.001, "max": 0.003, "rounds": 3, "data": []},
            }
        ]
    }
    refusals = [
        {
            "test": "compile",
            "backend": "fst",
            "workload": "w",
            "vocab": "small",
            "error": "CompileLimitExceeded",
            "reason": "...",
        }
    ]
    results = report.Results(bench, refusals)
    lines = report._matrix(results, "test_compile", "small", ["w"], report._compile_cell)
    assert "| `w` | 2.0 (1.0–3.0) |" in "\n".join(lines)
    assert results.refusal("compile", "fst", "w", "small") == "CompileLimitExceeded"
    assert results.refusal("compile", "fst", "w", "llama3") is None


def test_a_loop_projected_past_its_budget_is_skipped_and_the_report_says_why(tmp_path, monkeypatch):
    """The loop's masks are projected from the first masks along the
    document; past ``$CONSTRAIN_BENCH_LOOP_BUDGET_S`` the loop is not run
    (XGrammar would take half an hour on the GSM8K schema) and its cell
    says why, instead of a figure or a bare dash."""
    monkeypatch.setenv("CONSTRAIN_BENCH_LOOP_BUDGET_S", "0")
    out = tmp_path / "bench"
    select = "(koo-iso-date-time and (test_loop or test_compile)) or unconstrained"
    assert _quick_small_run(out, ["naive"], select) == 0
    bench = json.loads((out / "raw" / "bench.json").read_text())
    names = {b["name"] for b in bench["benchmarks"]}
    assert {"test_loop_unconstrained[small-1]", "test_loop_unconstrained[small-4]"} <= names
    assert not any(n.startswith("test_loop[") for n in names)
    rows = [
        line
        for line in (out / "REPORT.md").read_text().splitlines()
        if line.startswith("| `koo-iso-date-time` |") and "per mask" in line
    ]
    assert len(rows) == 2  # one table per batch
    for row in rows:
        assert "skipped (" in row and "s per mask, projected" in row and "> 0 s)" in row
        assert not re.search(r"\d[eE][+-]\d", row)  # durations written out, not as exponents


def test_durations_in_skip_reasons_are_written_out():
    """A projected loop of 590 s reads "590 s", not "5.9e+02 s"; a mask of
    45 µs reads "45 µs", not "4.5e-05 s"."""
    from constrain_bench.bench_compare import _duration

    assert [_duration(x) for x in (590.3, 12_345.0, 1.4, 0.0012, 4.5e-5, 0.0)] == [
        "590 s",
        "12,345 s",
        "1.4 s",
        "1.2 ms",
        "45 µs",
        "0 µs",
    ]


def test_pairs_are_run_in_alternating_order():
    """Each round's two loops run back to back, the second first in every
    other round (what a run leaves behind favours neither); the pairs come
    back as (first's, second's) whatever ran first."""
    from constrain_bench.bench_compare import _alternating

    calls = []

    def runner(name):
        def run():
            calls.append(name)
            return f"{name}{len(calls)}"

        return run

    pairs = _alternating(runner("a"), runner("b"), 4)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert pairs == [("a1", "b2"), ("a4", "b3"), ("a5", "b6"), ("a8", "b7")]
    calls.clear()
    assert len(_alternating(runner("a"), runner("b"), 3)) == 3  # no time: the rounds asked
    calls.clear()
    slow = runner("s")

    def sleepy():
        time.sleep(0.002)
        return slow()

    pairs = _alternating(sleepy, runner("b"), 1, seconds=0.05)  # then two rounds at a time
    assert len(pairs) >= 5 and len(pairs) % 2 == 1
    assert calls[:6] == ["s", "b", "b", "s", "s", "b"]
    # then on until the pairs resolve what is asked, or the most time is spent
    asked = []

    def resolved(pairs):
        asked.append(len(pairs))
        return len(pairs) >= 9

    pairs = _alternating(sleepy, runner("b"), 3, 0.0, resolved, most=10.0)
    assert len(pairs) == 9 and asked == [3, 5, 7, 9]
    start = time.perf_counter()
    pairs = _alternating(sleepy, runner("b"), 1, 0.0, lambda pairs: False, most=0.05)
    assert len(pairs) >= 5 and time.perf_counter() - start < 1.0


def test_the_median_interval_is_read_from_order_statistics():
    from constrain_bench.bench_compare import median_interval

    # 100 values: ranks 50 ∓ 1.96·√100/2 (40.2): the 41st and the 60th
    assert median_interval(range(1, 101)) == (41, 60)
    assert median_interval([3, 1, 2, 5, 4]) == (1, 5)  # below six values: the range
    assert median_interval([7.0] * 6) == (7.0, 7.0)
    low, high = median_interval(range(1, 1001))  # more rounds, a narrower interval
    assert (low, high) == (470, 531)  # ranks 500 ∓ 30.99: a third as wide, for the spread


def test_loop_rounds_come_from_the_environment(monkeypatch):
    from constrain_bench import workloads

    monkeypatch.delenv("CONSTRAIN_BENCH_LOOP_ROUNDS", raising=False)
    assert workloads.loop_rounds(4) == 4
    monkeypatch.setenv("CONSTRAIN_BENCH_LOOP_ROUNDS", "2")
    assert workloads.loop_rounds(4) == 2
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv("CONSTRAIN_BENCH_LOOP_ROUNDS", bad)
        with pytest.raises(ValueError, match="CONSTRAIN_BENCH_LOOP_ROUNDS"):
            workloads.loop_rounds(4)
    monkeypatch.delenv("CONSTRAIN_BENCH_SPECULATIVE_S", raising=False)
    assert workloads.speculative_seconds((10.0, 30.0)) == (10.0, 30.0)
    for text, seconds in (("10", (10.0, 10.0)), ("5-20", (5.0, 20.0)), (" 0 ", (0.0, 0.0))):
        monkeypatch.setenv("CONSTRAIN_BENCH_SPECULATIVE_S", text)
        assert workloads.speculative_seconds((10.0, 30.0)) == seconds
    for bad in ("-1", "ten", "20-10", "1-2-3", "5-"):
        monkeypatch.setenv("CONSTRAIN_BENCH_SPECULATIVE_S", bad)
        with pytest.raises(ValueError, match="CONSTRAIN_BENCH_SPECULATIVE_S"):
            workloads.speculative_seconds((10.0, 30.0))


def test_speculative_drafts_are_measured_against_the_loop_without(tmp_path):
    """``test_loop_speculative``: backends with the ``propose`` feature run
    the loop without drafts then with them; the speed-up is the ratio of the
    pair's tokens/s, the drafted and accepted tokens are counted, and the
    report has a row per batch. A backend that drafts nothing is skipped. A
    run of the loop stages alone (as on a GPU) still reports its vocabulary."""
    out = tmp_path / "bench"
    select = "koo-json-object and speculative or unconstrained"
    assert _quick_small_run(out, ["domino", "naive"], select) == 0
    bench = json.loads((out / "raw" / "bench.json").read_text())
    entries = {b["name"]: b for b in bench["benchmarks"] if "speculative" in b["name"]}
    assert set(entries) == {
        f"test_loop_speculative[small-domino-koo-json-object-{batch}]" for batch in (1, 4)
    }
    for entry in entries.values():
        e = entry["extra_info"]
        q1, q3 = e["speedup_quartiles"]
        assert e["speedup_min"] <= q1 <= e["speedup"] <= q3 <= e["speedup_max"]
        low, high = e["speedup_interval"]  # two rounds: their range
        assert (low, high) == (e["speedup_min"], e["speedup_max"])
        assert 0 <= e["accepted"] <= e["drafted"] and e["passes"] <= e["plain_passes"]
        if e["batch"] == 1:  # the object's keys are drafted and kept, saving passes
            assert e["accepted"] > 0 and e["passes"] < e["plain_passes"]
        # (at batch 4 the measured policy may rightly find drafts dear on this CPU:
        # in some runs the median of its two rounds kept none, or saved no pass)
        assert e["rounds"] == 2  # twice the loop stage's (quick: 1), one in each order
    text = (out / "REPORT.md").read_text()
    assert "alternating from round to round (2 rounds)" in text
    assert "(in parentheses, the 95 % interval of that median:" in text
    assert "## Vocabulary `small`" in text and "### Time to first mask" not in text
    assert "### Speculative drafts" in text
    rows = [line for line in text.splitlines() if line.startswith(("| 1 | `koo", "| 4 | `koo"))]
    spec_rows = [line for line in rows if "→" in line and "×" in line]
    assert len(spec_rows) == 2 and all("`domino`" in line for line in spec_rows)


def _loop_entry(name: str, batch: int, info: dict, **params) -> dict:
    phases = {"forward": 0.0, "mask": 0.0, "apply": 0.0, "sample": 0.0, "update": 0.0}
    return {
        "name": name,
        "params": {"vocab": "small", "batch": batch, **params},
        "extra_info": {"per_pass_s": {**phases, "other": 0.0}, "share": 0.5, **info},
    }


@pytest.mark.parametrize("recorded", [True, False], ids=["pairs-recorded", "older-run"])
def test_the_unconstrained_loop_is_read_from_the_runs_paired_with_the_cells(recorded):
    """The unconstrained stage ran once, before the pairs, in other minutes of
    a VM that drifts: the report's unconstrained figures are the medians of
    the unconstrained runs paired with the cells (the stage's, for raw
    results written before the pairs recorded their phases)."""
    alone = _loop_entry("test_loop_unconstrained[small-1]", 1, {"tokens_per_s": 200.0})
    alone["extra_info"]["per_pass_s"]["forward"] = 0.004
    cells = []
    for backend, speed, forward in (("a", 300.0, 0.002), ("b", 280.0, 0.003), ("c", 250.0, 0.0)):
        info = {"tokens_per_s": speed * 0.9, "ratio": 0.9, "unconstrained_tokens_per_s": speed}
        if recorded:
            info["unconstrained_share"] = 0.25
            info["unconstrained_per_pass_s"] = {
                **dict.fromkeys(("mask", "apply", "update", "other"), 0.0),
                "forward": forward,
                "sample": 0.0005,
            }
        cells.append(
            _loop_entry(f"test_loop[small-{backend}-w-1]", 1, info, backend=backend, workload="w")
        )
    text = "\n".join(
        report._loop_table(report.Results({"benchmarks": [alone, *cells]}, []), "small")
    )
    assert "unconstrained: 280 tokens/s (the median of the unconstrained runs paired with" in text
    assert "250–300 from cell to cell" in text
    [row] = [line for line in text.splitlines() if line.startswith("| 1 | (unconstrained) |")]
    if recorded:  # forward 2.00 ms: the median over the cells; sample 0.50 ms
        assert row.startswith("| 1 | (unconstrained) | — | 2.00 | 0.00 | 0.00 | 0.50 |")
        assert row.endswith("| 25.0% |") and "runs paired with them:" in text
    else:
        assert row.startswith("| 1 | (unconstrained) | — | 4.00 |") and row.endswith("| 50.0% |")
        assert "the unconstrained stage, run once before the pairs:" in text


def test_masks_overlapped_with_the_pass_get_a_column_only_where_measured():
    """A loop that filled masks in its worker thread (``overlapped`` per pass)
    adds a column, 0.00 for the rows without; a report without any has none."""
    cells = []
    for backend, overlapped in (("a", 0.0012), ("b", None)):
        info = {"tokens_per_s": 100.0, "ratio": 0.9, "unconstrained_tokens_per_s": 111.0}
        entry = _loop_entry(
            f"test_loop[small-{backend}-w-1]", 1, info, backend=backend, workload="w"
        )
        if overlapped is not None:
            entry["extra_info"]["per_pass_s"]["overlapped"] = overlapped
        cells.append(entry)
    alone = _loop_entry("test_loop_unconstrained[small-1]", 1, {"tokens_per_s": 111.0})

    def table(entries):
        results = report.Results({"benchmarks": [alone, *entries]}, [])
        return "\n".join(report._loop_table(results, "small")).splitlines()

    lines = table(cells)
    [header] = [line for line in lines if line.startswith("| batch | workload | backend | forward")]
    assert header.endswith("| other | overlapped | beside the forward |")
    [a] = [line for line in lines if "`a`" in line and line.startswith("| 1 |")]
    [b] = [line for line in lines if "`b`" in line and line.startswith("| 1 |")]
    assert a.endswith("| 0.00 | 1.20 | 50.0% |") and b.endswith("| 0.00 | 0.00 | 50.0% |")
    assert any("*overlapped*: masks filled in the loop's worker thread" in line for line in lines)
    lines = table(cells[1:])
    [header] = [line for line in lines if line.startswith("| batch | workload | backend | forward")]
    assert header.endswith("| other | beside the forward |")
    assert not any("overlapped" in line for line in lines)


def test_a_speculative_loop_past_its_budget_is_a_row_that_says_why():
    refusals = [
        {
            "test": "loop_speculative",
            "backend": "domino",
            "workload": "domino-json",
            "vocab": "small",
            "error": "TooSlow",
            "reason": "1.2 s per mask, projected 590 s > 120 s",
            "batch": 16,
        }
    ]
    lines = report._speculative_table(report.Results({"benchmarks": []}, refusals), "small")
    [row] = [line for line in lines if line.startswith("| 16 |")]
    assert "`domino-json`" in row and "skipped (1.2 s per mask, projected 590 s > 120 s)" in row
    assert report._speculative_table(report.Results({"benchmarks": []}, []), "small") == []


def test_maskbench_section_reports_first_masks_steps_and_stalls():
    """The MaskBench section's latency table carries each summary figure
    where its header says, the stall count as "within of walked"; a summary
    written before the stall count existed shows a dash there."""
    from constrain_bench.maskbench import SchemaResult, summarize

    results = [
        SchemaResult("a", "s1", "pass", 2.0, [4.0, 7000.0]),
        SchemaResult("a", "s2", "pass", 4.0, [3.0, 5.0]),
        SchemaResult("a", "s3", "compile_error", None, [], "UnsupportedConstraint"),
    ]
    summary = summarize(results)
    meta = {"schemas": 3, "data": "d", "vocab": "small", "timeout_s": 1.0}
    lines = report._maskbench_section(report.Results({}, [], {"meta": meta, "summary": summary}))
    text = "\n".join(lines)
    assert "| `a` | 3 | 2 | 0 | 1 | 0 | 0 | 0 |" in text  # the outcomes
    header = next(line for line in lines if line.startswith("| backend | TTFM p50"))
    row = next(line for line in lines if line.startswith("| `a` | 3.0"))
    names, values = ([c.strip() for c in line.strip("|").split("|")] for line in (header, row))
    cells = dict(zip(names, values, strict=True))
    assert cells["TTFM p50 (ms)"] == "3.0"
    assert cells["TBM max (µs)"] == "7,000.0"
    assert cells["slowest step, median schema (ms)"] == "3.5"  # (0.005 + 7.0) / 2
    assert cells["no step over 5 ms"] == "1 of 2"
    for key in ("walked", "within_stall", "slowest_step_p50_ms"):
        del summary[0][key]
    old = report._maskbench_section(report.Results({}, [], {"meta": meta, "summary": summary}))
    assert next(line for line in old if line.startswith("| `a` | 3.0")).endswith("| — | — |")


def test_a_selection_that_matches_no_benchmark_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="--select 'no-such-workload' matched none"):
        _quick_small_run(tmp_path, ["naive"], "no-such-workload")
    assert not (tmp_path / "REPORT.md").exists()


def test_the_vocabulary_scaling_table_lists_each_size(tmp_path):
    """The scaling section's table: a backend and workload per row, one cell
    per vocabulary size (the p50 of its steps), refusals after them."""
    entries = [
        {
            "name": f"test_scaling_vocab[fsm-w-{size}]",
            "params": {"backend": "fsm", "workload": "w"},
            "extra_info": {"vocab_size": size},
            "stats": {"data": [seconds] * 3},
        }
        for size, seconds in ((1000, 2e-6), (32000, 5e-6))
    ]
    refusals = [
        {"test": "scaling_vocab", "backend": "fsm", "workload": "w", "vocab": "128k", "error": "E"}
    ]
    results = report.Results({"benchmarks": entries}, refusals)
    lines = report._scaling_section(results, tmp_path)
    assert "| `fsm` | `w` | 1,000: 2.0 | 32,000: 5.0 | 128k: refused (E) |" in lines
    assert (tmp_path / "scaling_vocab.png").exists()


def test_the_report_names_the_machine_and_day_that_measured(tmp_path):
    """A run records when and on what it measured (``raw/run.json``), so a
    report written again elsewhere (``--report-only``) still names them; a
    run recorded before they were kept gets today's and this machine's."""
    out = tmp_path / "bench"
    raw = out / "raw"
    raw.mkdir(parents=True)
    measured = {"cpu": "Some CPU (avx512)", "cores": "64", "memory": "512 GiB", "gpu": "none",
                "python": "3.0.0", "torch": "9.9"}  # fmt: skip
    run = {"command": "x", "seconds": 60.0, "quick": True, "date": "2001-02-03"}
    (raw / "run.json").write_text(json.dumps(run | {"machine_info": measured}))
    assert cli.main(["--out", str(out), "--report-only"]) == 0
    head = (out / "REPORT.md").read_text().split("\n\n")[1:3]
    assert head[0].startswith("Produced by `x` on 2001-02-03 in 1.0 min")
    assert head[1].startswith(
        "Machine: cpu Some CPU (avx512), cores 64, memory 512 GiB, gpu none.\n"
        "Versions: python 3.0.0, torch 9.9."
    )
    (raw / "run.json").write_text(json.dumps({"command": "x", "seconds": 60.0, "quick": True}))
    assert cli.main(["--out", str(out), "--report-only"]) == 0
    text = (out / "REPORT.md").read_text()
    assert f"on {time.strftime('%Y-%m-%d')} in" in text
    assert f"Machine: cpu {report.machine()['cpu']}, cores" in text


def test_the_cpu_is_named_with_its_widest_vector_extension(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 avx512f\n\n"
        "processor\t: 1\nmodel name\t: other\nflags\t\t: fpu\n"
    )
    assert report.machine(info)["cpu"] == "AMD EPYC (avx512)"
    info.write_text("model name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2\n")
    assert report.machine(info)["cpu"] == "AMD EPYC (avx2)"
    info.write_text("model name\t: Some ARM\nFeatures\t: fp asimd\n")
    assert report.machine(info)["cpu"] == "Some ARM (neon)"
    info.write_text("model name\t: Plain\nflags\t\t: fpu\n")
    assert report.machine(info)["cpu"] == "Plain"
