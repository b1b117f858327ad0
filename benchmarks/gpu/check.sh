#!/usr/bin/env bash
# On the GPU machine, after `source .dev/gpu-setup.sh` (benchmarks/gpu/bundle.sh made .dev/):
# the checks and figures of the GPU loop (issue 26), each part under its own time limit and
# written under $OUT as it comes, so a run cut short still returns what it finished.
#   tests  the CUDA tests: the apply kernel and torch path against the reference, the loop
#   apply  the apply micro benchmark: the fused kernel, the torch path, XGrammar's kernel
#   passes what a forward pass costs by its width, with and without holes in the attention
#          mask, device time against the host's (passes.py; a few seconds)
#   fills  llguidance's masks at batch 1 and 16: row by row against its parallel fill on the
#          machine's cores, and each beside a forward pass in a worker thread; then the loop
#          end to end with its masks filled on the calling thread against beside the pass
#          (fill_beside_forward; fills.py, about a minute)
#   loop   the end-to-end and speculative stages on random Llama-3.2-1B weights, bf16
#          (backends: $BACKENDS, default domino fst llguidance naive; $LOOP_MODEL another shape)
#   all    the five (about 10 minutes)
# Several parts may be named in one call. A call may run 10 minutes at most and the parts'
# limits add up to 13.5, so two calls are safe: `check.sh tests apply passes fills` (7.5 at
# most), `check.sh loop` (5.5).
set -u
parts=" ${*:-all} "
want() { [[ "$parts" == *" $1 "* || "$parts" == *" all "* ]]; }
out=${OUT:-/tmp/gpu-out}; mkdir -p "$out"
cd "${PROJECT:-/tmp/proj}" || exit 1
{
  echo "date $(date -u +%F)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch, transformers, triton, numba; print('torch', torch.__version__, 'transformers', transformers.__version__, 'triton', triton.__version__, 'numba', numba.__version__)"
} > "$out/env.txt" 2>&1
if want tests; then
  CONSTRAIN_TEST_DEVICE=cuda timeout 120 python3 -m pytest -q -p no:cacheprovider -x \
    tests/test_masks.py tests/decoding > "$out/tests.txt" 2>&1
  echo "tests: exit $?" >> "$out/parts.txt"
fi
if want apply; then
  timeout 90 python3 -m pytest -q -p no:cacheprovider benchmarks/bench_masks.py -k cuda \
    --benchmark-columns=min,median,max --benchmark-json "$out/apply.json" > "$out/apply.txt" 2>&1
  echo "apply: exit $?" >> "$out/parts.txt"
fi
if want passes; then
  timeout 90 python3 benchmarks/gpu/passes.py --model "${LOOP_MODEL:-llama-3.2-1b}" \
    --out "$out/passes.json" > "$out/passes.txt" 2>&1
  echo "passes: exit $?" >> "$out/parts.txt"
fi
if want fills; then
  timeout 150 python3 benchmarks/gpu/fills.py --model "${LOOP_MODEL:-llama-3.2-1b}" \
    --out "$out/fills.json" > "$out/fills.txt" 2>&1
  echo "fills: exit $?" >> "$out/parts.txt"
fi
if want loop; then
  # $BACKENDS to split the stage over two calls; a loop whose masks alone are projected past
  # 30 s is skipped and the report says so (naive at batch 16: about a minute a workload)
  chosen=(); for b in ${BACKENDS:-domino fst llguidance naive}; do chosen+=(--backend "$b"); done
  # two rounds (one in each order; drafts: four, then 10 s a case), to fit the device's minutes
  CONSTRAIN_BENCH_LOOP_ROUNDS=${CONSTRAIN_BENCH_LOOP_ROUNDS:-2} CONSTRAIN_BENCH_SPECULATIVE_S=${CONSTRAIN_BENCH_SPECULATIVE_S:-10} \
  CONSTRAIN_BENCH_LOOP_BUDGET_S=${CONSTRAIN_BENCH_LOOP_BUDGET_S:-30} timeout 330 \
    python3 -m constrain_bench --vocab llama3 --loop-model "${LOOP_MODEL:-llama-3.2-1b}" --no-maskbench \
    --select loop "${chosen[@]}" --out "$out/bench" > "$out/loop.txt" 2>&1
  echo "loop: exit $?" >> "$out/parts.txt"
fi
cat "$out/parts.txt" 2>/dev/null
