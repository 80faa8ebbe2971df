#!/usr/bin/env bash
# scripts/device/session28_c.sh OUT — session 28's FP8 decode heuristic (the skinny FP8 config admitted with its fitted
# term, gemm_config.cpp kSkinnyFp8LatencyUs), from binaries built on the Debian machine (pack_prebuilt.sh BUILD_DIR
# /path/flux-bench-old: flux-bench-old = bfeef8b, before it; carry .devbin).
# 1. The FP8 test half at M <= 64 (every 3rd row, never fitted on): old, new, old, side by side in one call.
# 2. The GPU tests the change reaches: FP8 GEMM, skinny, split-K, and the FP8 fused-op jobs (their GEMMs at decode M
#    now may pick the skinny FP8 config split: hooks, graphs, W = 1..8 on one GPU).
set -uo pipefail
source scripts/device/prebuilt.sh "$1"
tag="${TAG:-s28c}"
cat "$out/gpu.txt" >> "$out/bench.log"
for v in old new old2; do
  b=flux-bench; [ $v != new ] && b=flux-bench-old
  step bench.log 60 $b gemm --corpus test --corpus-every 3 --corpus-max-m 64 --dtypes e4m3 --iters 20 --warmup 3 \
    --json "$out/gemm_corpus_test_every3_e4m3_m64_${v}_${gpu_tag}_${tag}.jsonl"
done
step tests.log 100 flux_gpu_tests --gtest_color=no --gtest_filter='Fp8GemmGpu*:SkinnyGpu*:SplitKGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests? from .* ran" "$out/tests.log" | tail -6
l=$(( $(left) - 15 ))
[ $l -gt 60 ] && step ops.log $l flux_gpu_tests --gtest_color=no --gtest_filter='Jobs/Fp8OpsGpu.*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|^\[       OK \]" "$out/ops.log" | tail -14
echo "done at $(( $(date +%s) - T0 )) s"
(cd "$out" && tar czf results_${tag}.tgz *.jsonl && rm -f *.jsonl)
exit $status
