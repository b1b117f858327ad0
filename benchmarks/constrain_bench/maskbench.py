"""MaskBench mode: every backend on a directory of JSON Schemas with test instances.

A MaskBench file is ``{"schema": {...}, "tests": [{"data": ..., "valid": bool}, ...]}``
(the real data is ``maskbench/data`` in the shared folder, a tenth of
guidance-ai/jsonschemabench's MaskBench). For each schema and backend this
compiles ``JsonSchema(schema)``, walks every test instance token by token
through a fresh checker, and records:

* **TTFM**, time to first mask: building the spec (``JsonSchema(schema)``,
  which checks the schema against its meta-schema), compiling it and the
  first ``fill_mask``, in ms: what a request with a new schema waits;
* **TBM**, time between masks: ``fill_mask`` + ``update`` per token step, in µs;
* a status: ``pass``, ``compile_error``, ``timeout``, ``validation_error``
  (a valid instance was rejected) or ``invalidation_error`` (an invalid one
  was accepted), in that order of precedence when several apply
  (``compile_error`` > ``timeout`` > ``validation_error`` >
  ``invalidation_error`` > ``pass``).

Each backend runs in its own forked worker process, fed one schema at a
time, so a schema that hangs costs ``timeout_s`` and a fresh worker, not the
run. A worker starts up as a serving engine does (:func:`start_up`: the
backend's per-vocabulary set-up, then ``gc.freeze()``), so TTFM is a new
schema's cost, not the vocabulary's, on every backend alike.
:func:`run_maskbench` runs the benchmark, :func:`summarize` turns its
results into one row of counts and percentiles per backend.
"""

from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import constrain_api as ca
from constrain_api.caching import SPEC_CACHES
from constrain_api.jsonschema import instance_text
from constrain_api.shared import shared_file

STATUSES = (
    "pass",
    "unchecked",
    "compile_error",
    "timeout",
    "validation_error",
    "invalidation_error",
)

#: Statuses of schemas that compiled; their timings enter the percentiles.
#: ``unchecked``: compiled, but none of its instances could be spelled (not a pass).
COMPILED_STATUSES = ("pass", "unchecked", "validation_error", "invalidation_error")

#: Failure statuses from a walk over the tests, in order of precedence.
_WALK_PRECEDENCE = ("validation_error", "invalidation_error")

#: Seconds a worker is given to exit after ``terminate`` before ``kill``.
_GRACE_S = 2.0

#: Seconds a worker's start-up (the per-vocabulary set-up) may take.
SETUP_TIMEOUT_S = 600.0


@dataclass
class SchemaResult:
    """One schema on one backend.

    ``schema`` is the file stem; ``status`` one of :data:`STATUSES`;
    ``ttfm_ms`` compile + first ``fill_mask`` in milliseconds (``None`` when
    it did not compile); ``tbm_us`` one entry per token step (``fill_mask`` +
    ``update``) over all walked instances, in microseconds; ``detail`` says
    what failed (exception text, or which instance failed at which step).
    """

    backend: str
    schema: str
    status: str
    ttfm_ms: float | None
    tbm_us: list[float] = field(default_factory=list)
    detail: str = ""


# ---------------------------------------------------------------- vocabulary


def load_vocabulary(vocab: str | ca.Vocabulary) -> ca.Vocabulary:
    """A ``Vocabulary`` as is, else :func:`constrain_bench.workloads.load_vocabulary`."""
    if isinstance(vocab, ca.Vocabulary):
        return vocab
    from .workloads import load_vocabulary as by_name

    return by_name(vocab)


def schema_files(data_dir: Path | None = None, limit: int | None = None) -> list[Path]:
    """The sorted ``*.json`` files of ``data_dir`` (default: the shared MaskBench
    data); with ``limit``, that many spread evenly over the sorted list."""
    if data_dir is None:
        data_dir = shared_file("maskbench/data")
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"{data_dir} is not a directory of MaskBench files")
    files = sorted(data_dir.glob("*.json"))
    if limit is None or limit >= len(files):
        return files
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    return [files[i * len(files) // limit] for i in range(limit)]


# ---------------------------------------------------------------- one schema (worker side)


def _is_set(row: np.ndarray, token: int) -> bool:
    return bool((int(row[token >> 5]) >> (token & 31)) & 1)


def _walk(
    compiled: Any, vocab: ca.Vocabulary, tokens: list[int], bitmask: np.ndarray, tbm: list[float]
) -> str | None:
    """Feed ``tokens`` to a fresh checker, appending each step's time to ``tbm``.

    Returns ``None`` when every token was allowed and EOS is allowed at the
    end, else why not. A checker exception propagates.
    """
    row = bitmask[0]
    checker = compiled.checker()
    clock = time.perf_counter_ns
    for step, token in enumerate(tokens):
        t0 = clock()
        checker.fill_mask(bitmask, 0)
        t1 = clock()
        if not _is_set(row, token):
            before = vocab.decode(tokens[:step])[-40:]
            return (
                f"token {token} {vocab.token_bytes(token)!r} not allowed at step "
                f"{step + 1}/{len(tokens)} after {before!r}"
            )
        t2 = clock()
        try:
            checker.update([token])
        except ca.TokenRejected as e:
            raise RuntimeError(f"the mask allowed token {token} but update rejected it: {e}") from e
        t3 = clock()
        tbm.append(((t1 - t0) + (t3 - t2)) / 1e3)
    checker.fill_mask(bitmask, 0)
    if not _is_set(row, vocab.eos_id):
        return f"EOS not allowed after all {len(tokens)} tokens"
    return None


def run_schema(
    backend: Any,
    backend_name: str,
    vocab: ca.Vocabulary,
    path: Path,
    on_compiled: Callable[[float], None] | None = None,
) -> SchemaResult:
    """Benchmark one MaskBench file on one backend, in this process.

    Compile errors (any exception from reading the file, building the spec or
    compiling) give ``compile_error``. Instances that ``instance_text`` or
    ``vocab.encode`` cannot spell are skipped and counted (in ``detail``); a
    schema none of whose instances could be walked is ``unchecked``, not a
    pass. An exception raised by the
    checker while walking an instance counts as a ``validation_error`` (the
    backend failed to check it), whatever the instance's flag.
    ``on_compiled(ttfm_ms)`` is called once the first mask is filled.
    """
    stem = path.stem
    bitmask = ca.allocate_bitmask(1, vocab.size)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        schema, tests = doc["schema"], doc.get("tests", [])
        # a schema not seen before: the core forgets whole specs (a few files
        # repeat a schema) and keeps what specs share, as a serving engine does
        ca.clear_caches(*SPEC_CACHES)
        t0 = time.perf_counter_ns()
        spec = ca.JsonSchema(schema)
        compiled = backend.compile(spec, vocab)
        compiled.checker().fill_mask(bitmask, 0)
        ttfm_ms = (time.perf_counter_ns() - t0) / 1e6
    except (ca.UnsupportedConstraint, ca.CompileLimitExceeded, ca.ConstraintError) as e:
        detail = f"{type(e).__name__}: {e}"
        return SchemaResult(backend_name, stem, "compile_error", None, [], detail)
    except Exception as e:
        return SchemaResult(
            backend_name, stem, "compile_error", None, [], f"unexpected {type(e).__name__}: {e}"
        )
    if on_compiled is not None:
        on_compiled(ttfm_ms)

    tbm: list[float] = []
    failures: dict[str, list[str]] = {status: [] for status in _WALK_PRECEDENCE}
    checked = skipped = 0
    for i, test in enumerate(tests):
        if "data" not in test or "valid" not in test:
            skipped += 1
            continue
        valid = bool(test["valid"])
        try:
            tokens = vocab.encode(instance_text(schema, test["data"]))
        except Exception:
            skipped += 1  # not spellable in this language or vocabulary
            continue
        checked += 1
        label = f"test {i} ({'valid' if valid else 'invalid'})"
        try:
            why = _walk(compiled, vocab, tokens, bitmask, tbm)
        except Exception as e:
            failures["validation_error"].append(f"{label}: checker raised {type(e).__name__}: {e}")
            continue
        if valid and why is not None:
            failures["validation_error"].append(f"{label} rejected: {why}")
        elif not valid and why is None:
            failures["invalidation_error"].append(f"{label} accepted")
    for status in _WALK_PRECEDENCE:
        if failures[status]:
            more = len(failures[status]) - 1
            detail = failures[status][0] + (f" (+{more} more)" if more else "")
            return SchemaResult(backend_name, stem, status, ttfm_ms, tbm, detail)
    if not checked:
        detail = f"no instance could be checked ({skipped} not spellable or without data)"
        return SchemaResult(backend_name, stem, "unchecked", ttfm_ms, tbm, detail)
    detail = f"{skipped} of {checked + skipped} instances not spellable" if skipped else ""
    return SchemaResult(backend_name, stem, "pass", ttfm_ms, tbm, detail)


def start_up(backend: Any, vocab: ca.Vocabulary) -> None:
    """What a serving engine does before its first request: the backend's
    per-vocabulary set-up (``backend.compiler(vocab)``, where it has one),
    then ``gc.freeze()``: the start-up heap (imported libraries, the
    vocabulary, the per-vocabulary tables) leaves the collector's view, as
    vLLM and SGLang do after start-up, so a full collection during a request
    scans what requests made. A set-up that fails is left to each compile
    to report."""
    make_compiler = getattr(backend, "compiler", None)
    if make_compiler is not None:
        with contextlib.suppress(Exception):
            make_compiler(vocab)
    gc.collect()
    gc.freeze()


def _serve(conn: Any, backend: Any, backend_name: str, vocab: ca.Vocabulary) -> None:
    """Worker loop: :func:`start_up`, send ``("ready", None)``; then receive a
    path, send ``("compiled", ttfm_ms)`` then ``("done", SchemaResult)``; a
    ``None`` or a closed pipe ends it. Ignores Ctrl-C: the parent handles it
    and ends the workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    start_up(backend, vocab)
    conn.send(("ready", None))
    while True:
        try:
            path = conn.recv()
        except (EOFError, OSError):
            return
        if path is None:
            return
        result = run_schema(
            backend, backend_name, vocab, path, lambda ms: conn.send(("compiled", ms))
        )
        conn.send(("done", result))


# ---------------------------------------------------------------- workers (parent side)


class _Worker:
    """One forked worker process for one backend, and its end of the pipe."""

    def __init__(self, ctx: Any, backend: Any, name: str, vocab: ca.Vocabulary):
        self.name = name
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(
            target=_serve, args=(child, backend, name, vocab), name=f"maskbench-{name}", daemon=True
        )
        self.process.start()
        child.close()
        self.ready = False

    def run(self, path: Path, timeout_s: float) -> SchemaResult:
        """Have the worker benchmark ``path``; ``timeout`` (and the worker killed)
        past ``timeout_s``, an error status when the worker dies. The worker's
        start-up (waited for first, up to ``SETUP_TIMEOUT_S``) is not counted."""
        ttfm_ms: float | None = None
        if not self.ready:
            try:
                self.ready = self.conn.poll(SETUP_TIMEOUT_S) and self.conn.recv()[0] == "ready"
            except (EOFError, OSError):
                self.ready = False
            if not self.ready:
                return self._died(path, ttfm_ms, "starting up")
        deadline = time.monotonic() + timeout_s
        try:
            self.conn.send(path)
        except OSError:
            return self._died(path, ttfm_ms)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.conn.poll(remaining):
                self.kill()
                phase = "checking instances" if ttfm_ms is not None else "compiling"
                detail = f"no result within {timeout_s:g} s (while {phase})"
                return SchemaResult(self.name, path.stem, "timeout", ttfm_ms, [], detail)
            try:
                kind, payload = self.conn.recv()
            except (EOFError, OSError):
                return self._died(path, ttfm_ms)
            if kind == "compiled":
                ttfm_ms = payload
            else:
                return payload

    def _died(self, path: Path, ttfm_ms: float | None, phase: str = "compiling") -> SchemaResult:
        """The result for a worker that died: ``compile_error`` before the first
        mask, ``validation_error`` after (it failed to check the instances)."""
        self.kill()
        code = self.process.exitcode
        if ttfm_ms is None:
            detail = f"worker died while {phase} (exit code {code})"
            return SchemaResult(self.name, path.stem, "compile_error", None, [], detail)
        detail = f"worker died while checking instances (exit code {code})"
        return SchemaResult(self.name, path.stem, "validation_error", ttfm_ms, [], detail)

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def stop(self) -> None:
        """Ask the worker to exit; kill it if it does not."""
        if self.process.is_alive():
            with contextlib.suppress(OSError, ValueError):
                self.conn.send(None)
            self.process.join(_GRACE_S)
        self.kill()

    def kill(self) -> None:
        """Terminate, then kill, the worker; close the pipe."""
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(_GRACE_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


def run_maskbench(
    backends: Sequence[str],
    vocab: str,
    data_dir: Path | None = None,
    *,
    limit: int | None = None,
    timeout_s: float = 30.0,
    progress: Callable[[SchemaResult], None] | None = None,
) -> list[SchemaResult]:
    """Run MaskBench: every file of ``data_dir`` (default: the shared data;
    ``limit`` files spread evenly when given) on every backend.

    ``vocab`` names the vocabulary (see :func:`load_vocabulary`); it is loaded
    once, here, and inherited by the forked workers, one per backend.
    Schemas go one at a time to a backend's worker; a schema without a result
    within ``timeout_s`` is a ``timeout``, and that worker is killed and
    replaced. Returns the results schema by schema, backends in the order
    given; ``progress(result)`` is called after each. No worker outlives the
    call. An unknown backend raises ``BackendNotFound`` before anything runs.
    """
    files = schema_files(data_dir, limit)
    instances = {name: ca.get(name) for name in backends}
    loaded = load_vocabulary(vocab)
    ctx = multiprocessing.get_context("fork")
    workers: dict[str, _Worker] = {}
    results: list[SchemaResult] = []
    finished = False
    try:
        for path in files:
            for name in backends:
                worker = workers.get(name)
                if worker is None or not worker.alive:
                    if worker is not None:
                        worker.kill()
                    worker = workers[name] = _Worker(ctx, instances[name], name, loaded)
                result = worker.run(path, timeout_s)
                if not worker.alive:
                    del workers[name]
                results.append(result)
                if progress is not None:
                    progress(result)
        finished = True
    finally:
        for worker in workers.values():
            if finished:
                worker.stop()
            else:  # an exception or Ctrl-C: a worker may be busy
                worker.kill()
    return results


# ---------------------------------------------------------------- summary


def _percentile(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


#: A step slower than this (ms) is a stall a user notices: ``summarize``
#: counts the schemas whose every step is within it.
STALL_MS = 5.0


def summarize(results: Sequence[SchemaResult]) -> list[dict]:
    """One dict per backend (in order of first appearance): ``backend``,
    ``schemas``, a count per status of :data:`STATUSES`, ``ttfm_p50_ms``,
    ``ttfm_p90_ms``, ``ttfm_p99_ms``, ``tbm_p50_us``, ``tbm_p90_us``,
    ``tbm_p99_us`` and ``tbm_max_us``; per schema, its slowest step:
    ``slowest_step_p50_ms`` (the median schema's), ``walked`` (schemas with
    a step) and ``within_stall`` (those whose every step took at most
    :data:`STALL_MS`). Figures are over the schemas that compiled
    (``pass``, ``unchecked``, ``validation_error``, ``invalidation_error``);
    a figure is ``None`` when there is no data for it."""
    by_backend: dict[str, list[SchemaResult]] = {}
    for r in results:
        by_backend.setdefault(r.backend, []).append(r)
    rows = []
    for backend, rs in by_backend.items():
        row: dict[str, Any] = {"backend": backend, "schemas": len(rs)}
        for status in STATUSES:
            row[status] = sum(r.status == status for r in rs)
        compiled = [r for r in rs if r.status in COMPILED_STATUSES]
        ttfm = [r.ttfm_ms for r in compiled if r.ttfm_ms is not None]
        tbm = [t for r in compiled for t in r.tbm_us]
        for q in (50, 90, 99):
            row[f"ttfm_p{q}_ms"] = _percentile(ttfm, q)
        for q in (50, 90, 99):
            row[f"tbm_p{q}_us"] = _percentile(tbm, q)
        row["tbm_max_us"] = float(max(tbm)) if tbm else None
        slowest = [max(r.tbm_us) / 1e3 for r in compiled if r.tbm_us]
        row["slowest_step_p50_ms"] = _percentile(slowest, 50)
        row["walked"] = len(slowest)
        row["within_stall"] = sum(ms <= STALL_MS for ms in slowest)
        rows.append(row)
    return rows
