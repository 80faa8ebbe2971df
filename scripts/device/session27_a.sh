#!/usr/bin/env bash
# scripts/device/session27_a.sh OUT — written in session 26 for the next call, from binaries built on the Debian
# machine (carry .devbin: pack_prebuilt.sh of main's build).
# 1. The FP8 GEMM tests in full: Fp8GemmGpu.SkinnySplitK's M = 40 splits and graph replay never ran after 9df09de
#    (a forced skinny config's unsplit heuristic call), plus the skinny and split-K tests.
# 2. The FP8 tuning half's decode sweep (M <= 64, every 3rd row; the skinny config and its splits are variants,
#    held back or not): the data to fit the FP8 decode time terms on (gemm_config.cpp held_back's note). The test half
#    is kept apart (s26b measured it).
set -uo pipefail
source scripts/device/prebuilt.sh "$1"
tag="${TAG:-s27a}"
cat "$out/gpu.txt" >> "$out/tests.log"
step tests.log 120 flux_gpu_tests --gtest_color=no --gtest_filter='Fp8GemmGpu*:SkinnyGpu*:SplitKGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests? from .* ran" "$out/tests.log" | tail -8
l=$(( ${LIMIT:-560} - ($(date +%s) - T0) - 10 ))
[ $l -gt 30 ] && step sweep.log $l flux-bench gemm --corpus tune --corpus-max-m 64 --corpus-every 3 --dtypes e4m3 \
  --sweep --sweep-iters 10 --iters 20 --warmup 2 --json "$out/gemm_sweep_tune_m1_64_every3_e4m3_${gpu_tag}_${tag}.jsonl"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
