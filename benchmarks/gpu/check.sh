#!/usr/bin/env bash
# On the GPU machine, after `source .dev/gpu-setup.sh` (benchmarks/gpu/bundle.sh made .dev/):
# the checks and figures of the GPU loop (issue 26), in one call of at most 9.2 minutes, so a
# session's 15 minutes of device time hold the machine's start, the call and a rerun of one
# part. The parts, in this order (the goal's figures before the diagnostics), each under its
# own time limit (seconds):
#   tests  (75) the CUDA tests: the apply kernel and torch path against the reference, the loop
#   apply  (45) the apply micro benchmark: the fused kernel, the torch path, XGrammar's kernel
#   loop  (300) the end-to-end and speculative stages on random Llama-3.2-1B weights, bf16
#          (backends: $BACKENDS, default domino fst llguidance naive; $LOOP_MODEL another shape)
#   passes (40) what a forward pass costs by its width, with and without holes in the attention
#          mask, device time against the host's (passes.py)
#   fills  (90) llguidance's masks at batch 1 and 16: row by row against its parallel fill on
#          the machine's cores, and each beside a forward pass in a worker thread; then the loop
#          end to end with its masks filled on the calling thread against beside the pass
#          (fill_beside_forward; fills.py)
#   all    the five (550 s at most)
# Several parts may be named in one call (`check.sh loop` reruns one). The device tool brings
# back at most 8 files of $OUT: the parts write under $WORK, and each finished part packs all
# of it into $OUT/run.tgz, replaced whole, so a call stopped at its limit still returns every
# part finished before it. `python -m constrain_bench.gpu FILES_AT` reads that archive.
set -u
parts=" ${*:-all} "
want() { [[ "$parts" == *" $1 "* || "$parts" == *" all "* ]]; }
out=${OUT:-/tmp/gpu-out}; mkdir -p "$out"
work=${WORK:-/tmp/gpu-run}; rm -rf "$work"; mkdir -p "$work"
cd "${PROJECT:-/tmp/proj}" || exit 1
pack() { tar czf "$out/run.tgz.part" -C "$work" . && mv "$out/run.tgz.part" "$out/run.tgz"; }
finished() {  # PART EXIT: record the part's exit status and time, then pack
  echo "$1: exit $2 (${SECONDS}s into the call)" | tee -a "$work/parts.txt"
  pack
}
{
  echo "date $(date -u +%F)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch, transformers, triton, numba; print('torch', torch.__version__, 'transformers', transformers.__version__, 'triton', triton.__version__, 'numba', numba.__version__)"
} > "$work/env.txt" 2>&1
pack
if want tests; then
  CONSTRAIN_TEST_DEVICE=cuda timeout 75 python3 -m pytest -q -p no:cacheprovider -x \
    tests/test_masks.py tests/decoding > "$work/tests.txt" 2>&1
  finished tests $?
fi
if want apply; then
  timeout 45 python3 -m pytest -q -p no:cacheprovider benchmarks/bench_masks.py -k cuda \
    --benchmark-columns=min,median,max --benchmark-json "$work/apply.json" > "$work/apply.txt" 2>&1
  finished apply $?
fi
if want loop; then
  # $BACKENDS to split the stage over two calls; a loop whose masks alone are projected past
  # 30 s is skipped and the report says so (naive at batch 16: about a minute a workload)
  chosen=(); for b in ${BACKENDS:-domino fst llguidance naive}; do chosen+=(--backend "$b"); done
  # two rounds (one in each order; drafts: four, then 10 s a case), to fit the device's minutes
  CONSTRAIN_BENCH_LOOP_ROUNDS=${CONSTRAIN_BENCH_LOOP_ROUNDS:-2} CONSTRAIN_BENCH_SPECULATIVE_S=${CONSTRAIN_BENCH_SPECULATIVE_S:-10} \
  CONSTRAIN_BENCH_LOOP_BUDGET_S=${CONSTRAIN_BENCH_LOOP_BUDGET_S:-30} timeout 300 \
    python3 -m constrain_bench --vocab llama3 --loop-model "${LOOP_MODEL:-llama-3.2-1b}" --no-maskbench \
    --select loop "${chosen[@]}" --out "$work/bench" > "$work/loop.txt" 2>&1
  finished loop $?
fi
if want passes; then
  timeout 40 python3 benchmarks/gpu/passes.py --model "${LOOP_MODEL:-llama-3.2-1b}" \
    --out "$work/passes.json" > "$work/passes.txt" 2>&1
  finished passes $?
fi
if want fills; then
  timeout 90 python3 benchmarks/gpu/fills.py --model "${LOOP_MODEL:-llama-3.2-1b}" \
    --out "$work/fills.json" > "$work/fills.txt" 2>&1
  finished fills $?
fi
