"""What one forward pass costs by its width: the question behind issue 26's
"a pass feeding drafts cost 4x a single-token pass".

For a model (``tiny`` or a shape of ``MODEL_SHAPES``) on the default device,
after a prompt of ``--prompt`` tokens, it times ``HFCausalLM.forward`` as
the loop calls it: ``T`` new tokens a row (1, then drafts of 1, 2 and 4
riding along), with an attention mask without holes and with one (a slot
masked out, as a rejected draft leaves where the cache cannot be cropped),
at each batch size. Per case it prints the median of the device's time
(CUDA events; the call's on a CPU), the call's wall time on the host (its
Python and kernel launches: when it is near the device's time, the pass is
launch-bound and masks filled after the call are not hidden by it) and the
ratio to ``T = 1`` without holes. A JSON copy goes to ``--out``.

    python benchmarks/gpu/passes.py --model llama-3.2-1b --batch 1 --batch 16
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch
from constrain_bench.workloads import build_loop_model, load_vocabulary


def _time_pass(
    model, vocab_size: int, batch: int, prompt: int, width: int, holes: bool, repeats: int
):
    """(device seconds, host seconds) medians of passes of ``width`` tokens
    a row after ``prompt`` cached ones (a fresh cache copy each time)."""
    dev = model.device
    ids = torch.randint(0, min(1000, vocab_size), (batch, prompt), device=dev)
    attn = torch.ones(batch, prompt, dtype=torch.long, device=dev)
    pos = torch.arange(prompt, device=dev).expand(batch, prompt)
    device_s, host_s = [], []
    for _ in range(repeats):
        _, cache = model.forward(ids, attn, pos, None, keep=torch.tensor([prompt - 1], device=dev))
        mask = torch.ones(batch, prompt + width, dtype=torch.long, device=dev)
        if holes:
            mask[:, prompt // 2] = 0
        new = torch.randint(0, min(1000, vocab_size), (batch, width), device=dev)
        new_pos = torch.arange(prompt, prompt + width, device=dev).expand(batch, width)
        keep = torch.arange(width, device=dev)
        if dev.type == "cuda":
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        t0 = time.perf_counter()
        model.forward(new, mask, new_pos, cache, keep=keep)
        host = time.perf_counter() - t0
        if dev.type == "cuda":
            end.record()
            end.synchronize()
            device_s.append(start.elapsed_time(end) / 1e3)
        else:
            device_s.append(host)
        host_s.append(host)
    return statistics.median(device_s), statistics.median(host_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny", help="tiny, or a key of MODEL_SHAPES")
    parser.add_argument("--vocab", default="llama3", help="as the bench's --vocab (default llama3)")
    parser.add_argument("--batch", type=int, action="append", help="repeatable (default 1, 16)")
    parser.add_argument("--prompt", type=int, default=64, help="cached tokens before the pass")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out", help="a JSON file for the figures")
    args = parser.parse_args(argv)
    vocab = load_vocabulary(args.vocab)
    model = build_loop_model(vocab, args.model)
    rows = []
    print(f"{args.model} on {model.device}, prompt {args.prompt} tokens, medians of {args.repeats}")
    print("batch  width  holes  device ms  host ms  vs width 1")
    for batch in args.batch or [1, 16]:
        base = None
        for width in (1, 2, 3, 5):
            for holes in (False, True):
                device_s, host_s = _time_pass(
                    model, vocab.size, batch, args.prompt, width, holes, args.repeats
                )
                base = device_s if base is None else base
                rows.append(
                    {"batch": batch, "width": width, "holes": holes,
                     "device_ms": device_s * 1e3, "host_ms": host_s * 1e3}
                )  # fmt: skip
                print(
                    f"{batch:5d}  {width:5d}  {'yes' if holes else 'no':>5}  "
                    f"{device_s * 1e3:9.2f}  {host_s * 1e3:7.2f}  {device_s / base:9.2f}x"
                )
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"model": args.model, "device": str(model.device), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
