"""MaskBench mode: statuses, timings, the per-schema timeout and the summary,
on small hand-written MaskBench files with the "small" vocabulary."""

from __future__ import annotations

import gc
import json
import multiprocessing
import time
from pathlib import Path

import numpy as np
import pytest
from constrain_bench import maskbench
from constrain_bench.maskbench import (
    STALL_MS,
    STATUSES,
    SchemaResult,
    run_maskbench,
    schema_files,
    summarize,
)

import constrain_api as ca
from constrain_api.jsonschema import instance_text

OBJECT = {
    "type": "object",
    "properties": {"a": {"type": "integer"}},
    "required": ["a"],
    "additionalProperties": False,
}
RECURSIVE = {"$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}}}, "$ref": "#/$defs/t"}
#: Two object shapes: a grammar with a reduce/reduce conflict, which fsm's
#: LALR(1) parser refuses and the naive oracle's Earley parser takes.
NOT_LALR = {
    "anyOf": [
        {"type": "object", "properties": {"n": {"type": "integer"}}},
        {"type": "object", "properties": {"m": {"type": "integer"}}},
    ]
}
#: Timeouts in these tests; normal schemas on the small vocabulary take milliseconds.
TIMEOUT_S = 2.0


def write(directory: Path, stem: str, schema: object, tests: list[tuple[object, bool]]) -> Path:
    path = directory / f"{stem}.json"
    doc = {"schema": schema, "tests": [{"data": d, "valid": v} for d, v in tests]}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def vocab() -> ca.Vocabulary:
    return maskbench.load_vocabulary("small")


def token_count(vocab: ca.Vocabulary, schema: object, data: object) -> int:
    return len(vocab.encode(instance_text(schema, data)))


def by_key(results: list[SchemaResult]) -> dict[tuple[str, str], SchemaResult]:
    return {(r.backend, r.schema): r for r in results}


def assert_no_workers_left() -> None:
    assert multiprocessing.active_children() == []


def test_statuses_on_naive_and_fsm(tmp_path, vocab):
    write(tmp_path, "a_pass", OBJECT, [({"a": 1}, True), ({"a": "x"}, False), ({"b": 2}, False)])
    write(tmp_path, "b_wrong_valid_flag", OBJECT, [({"a": 7}, False)])
    write(tmp_path, "c_both_flags_wrong", OBJECT, [({"a": 7}, False), ({"a": "x"}, True)])
    write(tmp_path, "d_not_lalr", NOT_LALR, [({"n": 1}, True), ([1], False)])
    seen: list[SchemaResult] = []
    results = run_maskbench(
        ["naive", "fsm"], "small", tmp_path, timeout_s=TIMEOUT_S, progress=seen.append
    )
    assert_no_workers_left()
    assert seen == results
    # Schema by schema, backends in the order given.
    assert [(r.schema, r.backend) for r in results] == [
        (s, b)
        for s in ("a_pass", "b_wrong_valid_flag", "c_both_flags_wrong", "d_not_lalr")
        for b in ("naive", "fsm")
    ]
    got = by_key(results)
    for backend in ("naive", "fsm"):
        passing = got[backend, "a_pass"]
        assert passing.status == "pass", passing.detail
        assert passing.ttfm_ms is not None and passing.ttfm_ms > 0
        # Every token of the valid instance is one step; invalid ones stop early.
        assert len(passing.tbm_us) >= token_count(vocab, OBJECT, {"a": 1})
        assert all(t > 0 for t in passing.tbm_us)

        wrong = got[backend, "b_wrong_valid_flag"]
        assert wrong.status == "invalidation_error"
        assert "test 0 (invalid) accepted" in wrong.detail
        assert len(wrong.tbm_us) == token_count(vocab, OBJECT, {"a": 7})

        both = got[backend, "c_both_flags_wrong"]
        assert both.status == "validation_error"  # precedence over invalidation_error
        assert "test 1 (valid) rejected" in both.detail and "not allowed" in both.detail

    assert got["naive", "d_not_lalr"].status == "pass"
    fsm_refused = got["fsm", "d_not_lalr"]
    assert fsm_refused.status == "compile_error"
    assert "UnsupportedConstraint" in fsm_refused.detail and "LALR(1)" in fsm_refused.detail
    assert fsm_refused.ttfm_ms is None and fsm_refused.tbm_us == []

    rows = {row["backend"]: row for row in summarize(results)}
    assert list(rows) == ["naive", "fsm"]
    for backend, row in rows.items():
        mine = [r for r in results if r.backend == backend]
        assert row["schemas"] == len(mine) == 4
        for status in STATUSES:
            assert row[status] == sum(r.status == status for r in mine)
        assert sum(row[s] for s in STATUSES) == row["schemas"]
        # validation/invalidation errors compiled: their timings count.
        steps = [t for r in mine if r.status != "compile_error" for t in r.tbm_us]
        assert row["tbm_max_us"] == pytest.approx(max(steps))
        assert row["tbm_p50_us"] <= row["tbm_p90_us"] <= row["tbm_p99_us"] <= row["tbm_max_us"]
        assert row["ttfm_p50_ms"] <= row["ttfm_p90_ms"] <= row["ttfm_p99_ms"]
    assert rows["fsm"]["compile_error"] == 1 and rows["naive"]["compile_error"] == 0


def test_the_tokens_walked_are_the_instance_text(tmp_path, vocab):
    """A passing schema with only valid instances: one step per token of each."""
    data = [{"a": 1}, {"a": -12345}, {"a": 0}]
    write(tmp_path, "only_valid", OBJECT, [(d, True) for d in data])
    [result] = run_maskbench(["fsm"], "small", tmp_path, timeout_s=TIMEOUT_S)
    assert result.status == "pass"
    assert len(result.tbm_us) == sum(token_count(vocab, OBJECT, d) for d in data)


def test_time_to_first_mask_counts_building_the_spec(tmp_path, vocab, monkeypatch):
    """TTFM is what a request with a new schema waits: building the spec
    (the meta-schema check) counts, as compiling and the first mask do."""
    real = ca.JsonSchema

    def slow_spec(schema, **options):
        time.sleep(0.05)
        return real(schema, **options)

    path = write(tmp_path, "object", OBJECT, [({"a": 1}, True)])
    backend = ca.get("fsm")
    fast = maskbench.run_schema(backend, "fsm", vocab, path)
    monkeypatch.setattr(ca, "JsonSchema", slow_spec)
    slow = maskbench.run_schema(backend, "fsm", vocab, path)
    assert fast.status == slow.status == "pass"
    assert slow.ttfm_ms >= 50 and slow.ttfm_ms > fast.ttfm_ms + 40


def test_unspellable_instances_are_skipped(tmp_path, monkeypatch):
    real = maskbench.instance_text

    def spell(schema, data):
        if data == {"a": 99}:
            raise ValueError("cannot spell this one")
        return real(schema, data)

    monkeypatch.setattr(maskbench, "instance_text", spell)  # forked workers inherit it
    # Flagged invalid but valid: an invalidation_error were it walked.
    (tmp_path / "skip.json").write_text(
        json.dumps(
            {
                "schema": OBJECT,
                "tests": [
                    {"data": {"a": 1}, "valid": True},
                    {"data": {"a": 99}, "valid": False},
                    {"valid": True},  # no data: skipped too
                ],
            }
        )
    )
    (tmp_path / "none.json").write_text(
        json.dumps(
            {"schema": OBJECT, "tests": [{"data": {"a": 99}, "valid": True}, {"valid": True}]}
        )
    )
    results = run_maskbench(["naive"], "small", tmp_path, timeout_s=TIMEOUT_S)
    by_schema = {r.schema: r for r in results}
    assert by_schema["skip"].status == "pass", by_schema["skip"].detail
    assert by_schema["skip"].detail == "2 of 3 instances not spellable"
    # nothing walked: not a pass
    assert by_schema["none"].status == "unchecked"
    assert "no instance could be checked (2 " in by_schema["none"].detail


class _Hanging:
    """Delegates to naive; hangs in compile on a schema titled "hang-compile"
    and in ``update`` on one titled "hang-walk"."""

    name = "test-maskbench-hang"
    capabilities = ca.Capabilities(kinds={"json_schema"})

    def compile(self, spec, vocab, **options):
        title = spec.schema.get("title") if isinstance(spec.schema, dict) else None
        if title == "hang-compile":
            time.sleep(600)
        compiled = ca.get("naive").compile(spec, vocab, **options)
        return _HangOnUpdate(compiled) if title == "hang-walk" else compiled


class _HangOnUpdate:
    def __init__(self, compiled):
        self.compiled = compiled

    def checker(self):
        checker = self.compiled.checker()

        def update(token_ids):
            time.sleep(600)

        checker.update = update
        return checker


def _registered(backend_class):
    """Register ``backend_class`` for a test: yields its name, then unregisters it."""
    unregister = ca.register(backend_class)
    try:
        yield backend_class.name
    finally:
        unregister()


@pytest.fixture
def hanging_backend():
    yield from _registered(_Hanging)


def test_a_hanging_schema_times_out_and_the_run_goes_on(tmp_path, hanging_backend):
    write(tmp_path, "a_before", OBJECT, [({"a": 1}, True), ({"a": "x"}, False)])
    write(tmp_path, "b_hang_compile", {**OBJECT, "title": "hang-compile"}, [({"a": 1}, True)])
    write(tmp_path, "c_after", OBJECT, [({"a": 2}, True), ({"a": 2}, False)])
    write(tmp_path, "d_hang_walk", {**OBJECT, "title": "hang-walk"}, [({"a": 1}, True)])
    write(tmp_path, "e_after", OBJECT, [({"a": 3}, True), ({"b": 3}, False)])
    started = time.monotonic()
    results = run_maskbench([hanging_backend, "naive"], "small", tmp_path, timeout_s=TIMEOUT_S)
    elapsed = time.monotonic() - started
    assert_no_workers_left()
    assert elapsed < 4 * TIMEOUT_S + 10  # two timeouts, not two 600 s sleeps
    got = by_key(results)

    hang = got[hanging_backend, "b_hang_compile"]
    assert hang.status == "timeout" and "while compiling" in hang.detail
    assert hang.ttfm_ms is None
    walk = got[hanging_backend, "d_hang_walk"]
    assert walk.status == "timeout" and "while checking instances" in walk.detail
    assert walk.ttfm_ms is not None  # it compiled before hanging

    # A fresh worker takes the schemas after each timeout; naive is unaffected.
    for backend in (hanging_backend, "naive"):
        assert got[backend, "a_before"].status == "pass"
        assert got[backend, "c_after"].status == "invalidation_error"
        assert got[backend, "e_after"].status == "pass"
    for schema in ("b_hang_compile", "d_hang_walk"):
        assert got["naive", schema].status == "pass"

    row = {r["backend"]: r for r in summarize(results)}[hanging_backend]
    assert (row["timeout"], row["pass"], row["invalidation_error"]) == (2, 2, 1)
    # Timeouts stay out of the percentiles even when they compiled.
    compiled_ttfm = [got[hanging_backend, s].ttfm_ms for s in ("a_before", "c_after", "e_after")]
    assert row["ttfm_p50_ms"] == pytest.approx(float(np.percentile(compiled_ttfm, 50)))


class _StartUpProbe:
    """Refuses every schema, saying how often its per-vocabulary set-up ran
    and whether the heap was frozen then and at compile time."""

    name = "test-maskbench-start-up"
    capabilities = ca.Capabilities(kinds={"json_schema"})

    def __init__(self):
        self.setups: list[int] = []  # gc.get_freeze_count() at each set-up

    def compiler(self, vocab):
        self.setups.append(gc.get_freeze_count())

    def compile(self, spec, vocab, **options):
        facts = f"setups={self.setups} frozen_at_compile={gc.get_freeze_count() > 0}"
        raise ca.UnsupportedConstraint(self.name, "anything", facts)


@pytest.fixture
def start_up_probe():
    yield from _registered(_StartUpProbe)


def test_workers_start_up_before_the_first_schema(tmp_path, start_up_probe):
    """TTFM is a new schema's cost: the per-vocabulary set-up runs once per
    worker, before the heap is frozen, not inside the first compile."""
    write(tmp_path, "a", OBJECT, [({"a": 1}, True)])
    write(tmp_path, "b", OBJECT, [({"a": 1}, True)])
    results = run_maskbench([start_up_probe], "small", tmp_path, timeout_s=TIMEOUT_S)
    assert [r.status for r in results] == ["compile_error"] * 2
    for r in results:
        assert r.detail.endswith("setups=[0] frozen_at_compile=True"), r.detail
    assert_no_workers_left()
    assert gc.get_freeze_count() == 0  # the parent's heap is not frozen


def test_no_worker_survives_an_exception(tmp_path):
    write(tmp_path, "a", OBJECT, [({"a": 1}, True)])
    write(tmp_path, "b", OBJECT, [({"a": 1}, True)])

    def boom(result):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_maskbench(["naive", "fsm"], "small", tmp_path, timeout_s=TIMEOUT_S, progress=boom)
    assert_no_workers_left()


def test_summarize_percentiles_over_compiled_schemas_only():
    results = [
        SchemaResult("x", "s1", "pass", 10.0, [1.0, 2.0, 3.0]),
        SchemaResult("x", "s2", "validation_error", 30.0, [4.0], "test 0 (valid) rejected"),
        SchemaResult("x", "s3", "invalidation_error", 20.0, [5.0, 6.0]),
        SchemaResult("x", "s4", "timeout", 999.0, [], "no result"),
        SchemaResult("x", "s5", "compile_error", None, [], "UnsupportedConstraint"),
        SchemaResult("y", "s1", "compile_error", None, [], "UnsupportedConstraint"),
        SchemaResult("y", "s2", "timeout", None, [], "no result"),
    ]
    x, y = summarize(results)
    assert x["backend"] == "x" and y["backend"] == "y"
    assert {s: x[s] for s in STATUSES} == {
        "pass": 1,
        "unchecked": 0,
        "compile_error": 1,
        "timeout": 1,
        "validation_error": 1,
        "invalidation_error": 1,
    }
    ttfm = [10.0, 30.0, 20.0]
    tbm = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    for q in (50, 90, 99):
        assert x[f"ttfm_p{q}_ms"] == pytest.approx(float(np.percentile(ttfm, q)))
        assert x[f"tbm_p{q}_us"] == pytest.approx(float(np.percentile(tbm, q)))
    assert x["tbm_max_us"] == 6.0
    # each compiled schema's slowest step: 3, 4 and 6 µs (the timeout's steps left out)
    assert x["slowest_step_p50_ms"] == pytest.approx(0.004)
    assert (x["walked"], x["within_stall"]) == (3, 3)
    assert (y["schemas"], y["compile_error"], y["timeout"], y["pass"]) == (2, 1, 1, 0)
    for key in (
        "ttfm_p50_ms",
        "ttfm_p90_ms",
        "ttfm_p99_ms",
        "tbm_p50_us",
        "tbm_max_us",
        "slowest_step_p50_ms",
    ):
        assert y[key] is None
    assert (y["walked"], y["within_stall"]) == (0, 0)
    assert summarize([]) == []


def test_summarize_counts_the_schemas_with_a_stall():
    """A schema one of whose steps passes ``STALL_MS`` is not within it,
    whatever its other steps; a step exactly at it is."""
    stall_us = STALL_MS * 1e3
    results = [
        SchemaResult("x", "fast", "pass", 1.0, [1.0, 2.0]),
        SchemaResult("x", "edge", "pass", 1.0, [stall_us, 3.0]),
        SchemaResult("x", "stalls", "pass", 1.0, [2.0] * 50 + [stall_us + 1.0]),
        SchemaResult("x", "rejects", "validation_error", 1.0, [3 * stall_us]),
        SchemaResult("x", "no steps", "unchecked", 1.0, []),
    ]
    (x,) = summarize(results)
    assert (x["walked"], x["within_stall"]) == (4, 2)
    slowest_ms = sorted([0.002, STALL_MS, STALL_MS + 0.001, 3 * STALL_MS])
    assert x["slowest_step_p50_ms"] == pytest.approx(float(np.median(slowest_ms)))


def test_limit_takes_files_spread_over_the_sorted_list(tmp_path):
    for i in range(10):
        write(tmp_path, f"s{i:02d}", OBJECT, [])
    every = schema_files(tmp_path)
    assert [p.stem for p in every] == [f"s{i:02d}" for i in range(10)]
    picked = schema_files(tmp_path, limit=3)
    assert len(picked) == 3 and picked[0] == every[0]
    gaps = np.diff([every.index(p) for p in picked])
    assert gaps.min() >= 3  # spread, not the first three
    assert schema_files(tmp_path, limit=50) == every
    results = run_maskbench(["fsm"], "small", tmp_path, limit=2, timeout_s=TIMEOUT_S)
    assert [r.schema for r in results] == [p.stem for p in schema_files(tmp_path, limit=2)]
    # no tests: compiled, nothing checked, so not a pass
    assert all(r.status == "unchecked" and r.tbm_us == [] for r in results)


def test_bad_arguments(tmp_path):
    not_a_tokenizer = tmp_path / "notes.txt"
    not_a_tokenizer.write_text("hello")
    with pytest.raises(ValueError, match="not a tokenizer"):
        run_maskbench(["naive"], str(not_a_tokenizer), tmp_path)
    with pytest.raises(ca.BackendNotFound):
        run_maskbench(["no-such-backend"], "small", tmp_path)
    with pytest.raises(FileNotFoundError):
        run_maskbench(["naive"], "small", tmp_path / "absent")
