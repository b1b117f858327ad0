"""Run the hostile corpus (``hostile.py``) against every installed backend,
each case in a process of its own with a timeout and a memory cap, and write
the table of outcomes (``nox -s fuzz``; ``python -m constrain_conformance.fuzz --help``).

Outcomes: ``ok`` (compiled and judged right, or a misuse handled as
documented), ``unjudged`` (compiled, but the oracle refuses the
constraint, so no mask can be compared), ``error`` (a documented error: ``ca.ConstrainError``,
``TypeError``, ``ValueError``, and the thread guard's ``RuntimeError``),
``undocumented`` (any other exception), ``wrong`` (the case's own check
failed), ``crash`` (the process died), ``hang`` (past the timeout),
``memory`` (its resident memory passed the cap), ``n/a`` (the backend does
not take the case's kind). The processes fork from a server that has
imported the backends and nothing else (``multiprocessing``'s forkserver),
so a case starts in milliseconds and sees no other case's caches. Exit
status 1 when any case is undocumented, wrong, a crash, a hang or memory.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import multiprocessing
import sys
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import constrain_api as ca
from constrain_api.budget import resident_bytes

from . import corpus as vocabularies
from . import hostile

OUTCOMES = ("ok", "unjudged", "error", "undocumented", "wrong", "crash", "hang", "memory", "n/a")
BAD = frozenset({"undocumented", "wrong", "crash", "hang", "memory"})
DOCUMENTED = (ca.ConstrainError, TypeError, ValueError)


@dataclass(frozen=True)
class Result:
    backend: str
    case: str
    group: str
    outcome: str
    detail: str
    seconds: float


def classify(error: BaseException) -> tuple[str, str]:
    """``("error" | "undocumented", one line)`` for an exception a case let out."""
    line = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:200]
    documented = isinstance(error, DOCUMENTED) or (
        isinstance(error, RuntimeError) and "in use by another thread" in str(error)
    )
    return ("error" if documented else "undocumented"), line


def _child(
    conn, backend: str, case_name: str, corpus: str, seed: int, generated: int, vocab_name: str
) -> None:
    """Run one case in this (forked) process and send ``(outcome, detail)``."""
    try:
        cases = {c.name: c for c in hostile.cases(corpus, seed, generated)}
        vocab = _vocabulary(vocab_name)
        verdict = cases[case_name].run(backend, vocab)
        if verdict in ("ok", "unjudged", "n/a"):
            conn.send((verdict, ""))
        else:
            conn.send(("wrong", verdict.removeprefix("wrong: ")[:300]))
    except BaseException as e:  # classified, not hidden: the table shows it
        outcome, line = classify(e)
        if outcome == "undocumented":
            line += " | " + traceback.format_exc().strip().splitlines()[-3].strip()
        conn.send((outcome, line))
    finally:
        conn.close()


def _vocabulary(name: str) -> ca.Vocabulary:
    if name == "small":
        return vocabularies.small_vocabulary()
    return vocabularies.real_vocabulary(name)


def context():
    """The forkserver context the cases run in, the backends preloaded."""
    ctx = multiprocessing.get_context("forkserver")
    modules = sorted({info.backend_class.__module__ for info in ca.available()})
    ctx.set_forkserver_preload(["constrain_conformance.hostile", *modules])
    return ctx


def run_case(
    ctx,
    backend: str,
    case: hostile.Case,
    *,
    corpus: str = "hostile",
    seed: int = 0,
    generated: int = 10,
    vocab: str = "small",
    timeout: float = 60.0,
    memory_mb: float = 8192.0,
) -> Result:
    """One case in its own process, watched for time and memory."""
    receive, send = ctx.Pipe(duplex=False)
    process = ctx.Process(
        target=_child, args=(send, backend, case.name, corpus, seed, generated, vocab), daemon=True
    )
    start = time.perf_counter()
    process.start()
    send.close()
    outcome, detail = None, ""
    while True:
        if receive.poll(0.02):
            with contextlib.suppress(EOFError):
                outcome, detail = receive.recv()
            break
        if not process.is_alive():
            break
        elapsed = time.perf_counter() - start
        if elapsed > timeout:
            outcome, detail = "hang", f"killed after {timeout:.0f} s"
            break
        rss = resident_bytes(process.pid) / 2**20
        if rss > memory_mb:
            outcome, detail = "memory", f"killed at {rss:.0f} MiB"
            break
    seconds = time.perf_counter() - start
    if outcome in ("hang", "memory"):
        process.kill()
    process.join(5)
    if process.is_alive():
        process.kill()
        process.join()
    if outcome is None:
        code = process.exitcode
        outcome = "crash"
        detail = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
    receive.close()
    return Result(backend, case.name, case.group, outcome, detail, seconds)


def report(
    results: Sequence[Result], *, seed: int, vocab: str, timeout: float, memory_mb: float
) -> str:
    """The markdown of docs/reliability.md."""
    backends = sorted({r.backend for r in results})
    counts = {b: Counter(r.outcome for r in results if r.backend == b) for b in backends}
    lines = [
        "# Reliability: hostile inputs",
        "",
        "Generated by `nox -s fuzz` (`python -m constrain_conformance.fuzz`); do not edit by hand.",
        "",
        f"{len({r.case for r in results})} cases of `constrain_conformance/hostile.py` "
        f"(seed {seed}, "
        f"vocabulary `{vocab}`), each against every installed backend in a process of its own "
        f"with a {timeout:.0f} s timeout and a {memory_mb:.0f} MiB memory cap, the backends with "
        "their default limits (docs/usage.md, Limits). Case-independent ones (vocabulary files) "
        "run once, as `core`.",
        "",
        "*ok*: compiled, and its masks equal the oracle's along random paths (exact kinds) "
        "or allow nothing the oracle forbids; or the misuse handled as documented. "
        "*unjudged*: compiled, but the oracle (`naive`) refuses the constraint (a size "
        "bound), so no mask could be compared. "
        "*error*: a documented error (`ConstraintError`, `UnsupportedConstraint`, "
        "`CompileLimitExceeded`, `TokenRejected`, `TypeError`, `ValueError`, the thread "
        "guard's `RuntimeError`). *undocumented*: any other exception. *wrong*: a mask or a "
        "state the case's check refutes. *crash*: the process died. *hang*: killed at the "
        "timeout. *memory*: killed at the memory cap. *n/a*: the backend does not take the kind.",
        "",
        "| backend | " + " | ".join(OUTCOMES) + " | slowest case (s) |",
        "|---|" + "---|" * (len(OUTCOMES) + 1),
    ]
    for b in backends:
        slowest = max(r.seconds for r in results if r.backend == b)
        cells = " | ".join(str(counts[b].get(o, 0)) for o in OUTCOMES)
        lines.append(f"| `{b}` | {cells} | {slowest:.1f} |")
    bad = [r for r in results if r.outcome in BAD]
    lines += ["", "## Failures", ""]
    if not bad:
        lines.append("None: 0 undocumented errors, 0 wrong, 0 crashes, 0 hangs, 0 memory blow-ups.")
    for r in bad:
        lines.append(f"- `{r.backend}` / `{r.case}`: **{r.outcome}** — {r.detail}")
    lines += [
        "",
        "## Every case",
        "",
        "| case | group | " + " | ".join(f"`{b}`" for b in backends) + " |",
    ]
    lines.append("|---|---|" + "---|" * len(backends))
    by = {(r.backend, r.case): r for r in results}
    for name, group in dict.fromkeys((r.case, r.group) for r in results):
        cells = []
        for b in backends:
            r = by.get((b, name))
            cells.append(
                ""
                if r is None
                else r.outcome
                if r.outcome != "error"
                else f"error ({_short(r.detail)})"
            )
        lines.append(f"| `{name}` | {group} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _short(detail: str) -> str:
    """The error's type, and the bound of a ``CompileLimitExceeded``."""
    name = detail.split(":", 1)[0]
    if name == "CompileLimitExceeded" and "limit " in detail:
        return detail.split("limit ", 1)[1].split("=", 1)[0]
    return name


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m constrain_conformance.fuzz", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--backend", action="append", help="a backend (repeat); default: every installed one"
    )
    parser.add_argument(
        "--case", action="append", help="only cases whose name contains this (repeat)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated cases")
    parser.add_argument("--generated", type=int, default=10, help="generated cases of each sort")
    parser.add_argument(
        "--vocab", default="small", help="small (default) or a real vocabulary of ../shared"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    parser.add_argument("--memory-mb", type=float, default=8192.0, help="memory cap per case")
    parser.add_argument("--out", type=Path, help="write the markdown report here")
    args = parser.parse_args(argv)

    backends = args.backend or sorted(i.name for i in ca.available())
    cases = [
        c
        for c in hostile.corpus(args.seed, args.generated)
        if not args.case or any(part in c.name for part in args.case)
    ]
    ctx = context()
    results: list[Result] = []
    for case in cases:
        targets = [b for b in (case.backends or backends) if b == "core" or b in backends]
        for backend in targets:
            result = run_case(
                ctx,
                backend if backend != "core" else "naive",
                case,
                seed=args.seed,
                generated=args.generated,
                vocab=args.vocab,
                timeout=args.timeout,
                memory_mb=args.memory_mb,
            )
            if backend == "core":
                result = dataclasses.replace(result, backend="core")
            results.append(result)
            mark = "" if result.outcome not in BAD else "  <--"
            print(
                f"{result.backend:11} {case.name:34} {result.outcome:12} "
                f"{result.seconds:6.1f}s {result.detail[:90]}{mark}",
                flush=True,
            )
    text = report(
        results, seed=args.seed, vocab=args.vocab, timeout=args.timeout, memory_mb=args.memory_mb
    )
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    bad = sum(r.outcome in BAD for r in results)
    print(f"{len(results)} runs, {bad} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
