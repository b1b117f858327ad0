"""What a batch's masks cost the host, and whether their fill can hide behind
the forward pass: the question behind issue 26's overhead at batch 16.

An eager model's forward pass is queued op by op from the host; where the
launches take as long as the device's work (``passes.py`` tells), masks
filled after the call add to the pass unless they are filled at the same
time, on other cores. With ``llguidance`` (whose engine runs outside
Python's GIL), for each workload and batch size, it times:

- ``serial``: ``Compiled.fill_masks`` row after row (``fill_threads=1``,
  the default);
- ``parallel``: the same in one call to llguidance's parallel fill on its
  own thread pool (``fill_threads=--threads``; 0: 80 % of the CPUs);
- ``forward``: one pass of the model as the loop calls it, to its logits;
- ``beside``: each fill in a Python worker thread started as the pass is
  queued, both waited for: near the longer of the two when the fill hides
  behind the launches, near their sum when it does not.

Each round puts the batch's checkers at new random points of the workload's
document (first visits, as a loop meets them); which fill goes first
alternates from round to round. Medians in µs, one line per
case; a JSON copy goes to ``--out``.

Then the decoding loop end to end (``generate``, argmax, 48 tokens, the
bench's prompts) with the masks filled on the calling thread
(``fill_beside_forward=False``) and in its worker thread beside the pass
(``True``, the default on CUDA for llguidance), ``--loop-rounds`` pairs in
alternating order on a fresh artifact each: tokens/s and the median of the
pairs' ratios (the outputs must be equal, or the script fails).

    python benchmarks/gpu/fills.py --model llama-3.2-1b --batch 1 --batch 16
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time

import torch
from constrain_bench.workloads import build_loop_model, load_vocabulary, loop_prompts, workloads

import constrain_api as ca

WORKLOADS = ("domino-json", "domino-gsm8k-json", "koo-json-object")
COLUMNS = ("serial", "parallel", "forward", "beside_serial", "beside_parallel")


class _Pass:
    """One forward pass of ``batch`` rows, one new token each, after a short
    prompt, as the loop calls it: :meth:`prepare` (untimed) makes a fresh
    cache, :meth:`run` queues the pass and returns its logits."""

    def __init__(self, model, vocab_size: int, batch: int, prompt: int = 16):
        dev = self.device = model.device
        self.model = model
        self.ids = torch.randint(0, min(1000, vocab_size), (batch, prompt), device=dev)
        self.attn = torch.ones(batch, prompt, dtype=torch.long, device=dev)
        self.pos = torch.arange(prompt, device=dev).expand(batch, prompt)
        self.new = torch.randint(0, min(1000, vocab_size), (batch, 1), device=dev)
        self.new_attn = torch.ones(batch, prompt + 1, dtype=torch.long, device=dev)
        self.new_pos = torch.full((batch, 1), prompt, device=dev)
        self.cache = None

    def prepare(self) -> None:
        _, self.cache = self.model.forward(self.ids, self.attn, self.pos, None)
        self.wait()

    def run(self) -> torch.Tensor:
        logits, _ = self.model.forward(self.new, self.new_attn, self.new_pos, self.cache)
        return logits

    def wait(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()


def _checkers(compiled, tokens: list[int], points: list[int]) -> list:
    out = []
    for p in points:
        checker = compiled.checker()
        checker.update(tokens[:p])
        out.append(checker)
    return out


def _time_case(compiled, tokens, batch: int, fpass: _Pass, repeats: int, rng) -> dict:
    """Medians (µs) of the columns over ``repeats`` rounds."""
    serial, parallel = compiled
    bitmask = ca.allocate_bitmask(batch, serial.vocab.size)
    times: dict[str, list[float]] = {name: [] for name in COLUMNS}
    for k in range(repeats):
        points = [rng.randrange(len(tokens)) for _ in range(batch)]
        # (which goes first alternates: the second meets what the first built)
        fills = [("serial", serial), ("parallel", parallel)][:: 1 if k % 2 == 0 else -1]
        for name, artifact in fills:
            checkers = _checkers(artifact, tokens, points)
            t0 = time.perf_counter()
            artifact.fill_masks(checkers, bitmask)
            times[name].append(time.perf_counter() - t0)
        fpass.prepare()
        t0 = time.perf_counter()
        fpass.run()
        fpass.wait()
        times["forward"].append(time.perf_counter() - t0)
        for name, artifact in fills:
            name = f"beside_{name}"
            checkers = _checkers(artifact, tokens, points)
            fpass.prepare()
            worker = threading.Thread(target=artifact.fill_masks, args=(checkers, bitmask))
            t0 = time.perf_counter()
            worker.start()
            fpass.run()
            worker.join()
            fpass.wait()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(values) * 1e6 for name, values in times.items()}


def _loop_case(model, vocab, backend, workload, batch: int, rounds: int) -> dict:
    """Tokens/s of the loop with masks filled on the calling thread and
    beside the pass (medians), and the median of the pairs' ratios."""
    from constrain_api.decoding import argmax, generate

    prompts = loop_prompts(vocab, batch)
    speeds: dict[bool, list[float]] = {False: [], True: []}
    first = None
    for k in range(rounds):
        for beside in (False, True)[:: 1 if k % 2 == 0 else -1]:
            compiled = backend.compile(workload.constraint, vocab)  # (first visits each time)
            result = generate(
                model, vocab, prompts, compiled, argmax(), max_len=48, fill_beside_forward=beside
            )
            speeds[beside].append(result.tokens_per_second)
            tokens = [g.token_ids for g in result.sequences]
            first = tokens if first is None else first
            if tokens != first:  # (every run, either way, decodes what the first did)
                raise AssertionError(f"the outputs differ with fill_beside_forward={beside}")
    ratios = [b / a for a, b in zip(speeds[False], speeds[True], strict=True)]
    return {
        "loop_calling_tps": statistics.median(speeds[False]),
        "loop_beside_tps": statistics.median(speeds[True]),
        "loop_ratio": statistics.median(ratios),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny", help="tiny, or a key of MODEL_SHAPES")
    parser.add_argument("--vocab", default="llama3", help="as the bench's --vocab (default llama3)")
    parser.add_argument("--batch", type=int, action="append", help="repeatable (default 1, 16)")
    parser.add_argument("--workload", action="append", help=f"repeatable (default {WORKLOADS})")
    parser.add_argument("--threads", type=int, default=0, help="the parallel fill's pool size")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--loop-rounds", type=int, default=3, help="0: no loop pairs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="a JSON file for the figures")
    args = parser.parse_args(argv)
    vocab = load_vocabulary(args.vocab)
    model = build_loop_model(vocab, args.model)
    known = {w.name: w for w in workloads()}
    backends = (ca.get("llguidance"), ca.get("llguidance", fill_threads=args.threads))
    rng = random.Random(args.seed)
    rows = []
    print(
        f"llguidance on {args.vocab}, {args.model} on {model.device}, parallel fill "
        f"threads {args.threads or 'default'}, medians of {args.repeats} (us)"
    )
    print(f"{'workload':20s} batch " + " ".join(f"{c:>15s}" for c in COLUMNS))
    with torch.inference_mode():
        for name in args.workload or WORKLOADS:
            workload = known[name]
            tokens = vocab.encode(workload.documents[0])
            compiled = tuple(b.compile(workload.constraint, vocab) for b in backends)
            for batch in args.batch or [1, 16]:
                fpass = _Pass(model, vocab.size, batch)
                figures = _time_case(compiled, tokens, batch, fpass, args.repeats, rng)
                rows.append({"workload": name, "batch": batch, **figures})
                cells = " ".join(f"{figures[c]:15.0f}" for c in COLUMNS)
                print(f"{name:20s} {batch:5d} {cells}")
        if args.loop_rounds:
            print(
                f"the loop end to end, {args.loop_rounds} pairs: tokens/s with masks filled on "
                "the calling thread -> beside the pass (median ratio)"
            )
            for name in args.workload or WORKLOADS:
                for batch in args.batch or [1, 16]:
                    loop = _loop_case(
                        model, vocab, backends[0], known[name], batch, args.loop_rounds
                    )
                    next(r for r in rows if (r["workload"], r["batch"]) == (name, batch)).update(
                        loop
                    )
                    print(
                        f"{name:20s} {batch:5d} {loop['loop_calling_tps']:9.0f} -> "
                        f"{loop['loop_beside_tps']:9.0f} ({loop['loop_ratio']:.3f}x)"
                    )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(
                {"model": args.model, "device": str(model.device), "threads": args.threads,
                 "rows": rows}, f, indent=1,
            )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
