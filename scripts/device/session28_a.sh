#!/usr/bin/env bash
# scripts/device/session28_a.sh OUT — the first call after session 28 (no device was lent in it), from binaries built
# on the Debian machine (pack_prebuilt.sh BUILD_DIR, carry .devbin) of main with the lagged FP8 promotion merged and
# its interval knob retired (bfeef8b or later).
# 1. The GPU tests the merge touches: FP8 (LaggedPromotionEveryLoopTail is new), skinny, split-K.
# 2. The FP8 suite (the merged build: the lagged kernels measured on main, not on the branch).
# 3. The FP8 decode fit's judge: the FP8 test half at M <= 64 (every 3rd row, never fitted on) swept (--sweep: every
#    config's time, so fit_heuristic.py --fix can score session 28's constants against the committed ones here).
# 4. The FP8 test half at M >= 128 (every 3rd row) with the merged build, if time is left.
# LIMIT (s, default 560): the call's budget; steps that would not fit are skipped and say so.
set -uo pipefail
source scripts/device/prebuilt.sh "$1"
tag="${TAG:-s28a}"
cat "$out/gpu.txt" >> "$out/tests.log"
step tests.log 150 flux_gpu_tests --gtest_color=no --gtest_filter='Fp8GemmGpu*:SkinnyGpu*:SplitKGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests? from .* ran" "$out/tests.log" | tail -8
step fp8.log 40 flux-bench gemm --dtypes e4m3 --iters 20 --json "$out/gemm_main_e4m3_${gpu_tag}_${tag}.jsonl"
grep -E "median" "$out/fp8.log" | tail -1
l=$(( $(left) - 120 ))
if [ $l -gt 60 ]; then
  step sweep.log $l flux-bench gemm --corpus test --corpus-max-m 64 --corpus-every 3 --dtypes e4m3 --sweep \
    --sweep-iters 10 --iters 20 --warmup 2 --json "$out/gemm_sweep_test_m1_64_every3_e4m3_${gpu_tag}_${tag}.jsonl"
else
  echo "skipped: the test half's FP8 decode sweep ($l s left for it)" | tee -a "$out/sweep.log"
fi
l=$(( $(left) - 10 ))
if [ $l -gt 60 ]; then
  step bench.log $l flux-bench gemm --corpus test --corpus-every 3 --corpus-min-m 128 --dtypes e4m3 --iters 20 \
    --warmup 3 --json "$out/gemm_corpus_test_every3_e4m3_m128_${gpu_tag}_${tag}.jsonl"
else
  echo "skipped: the FP8 test half at M >= 128 ($l s left for it)" | tee -a "$out/bench.log"
fi
echo "done at $(( $(date +%s) - T0 )) s"
# The tool returns at most 8 files from OUT: the JSON lines travel in one tarball.
(cd "$out" && tar czf results_${tag}.tgz *.jsonl && rm -f *.jsonl)
exit $status
