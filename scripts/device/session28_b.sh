#!/usr/bin/env bash
# scripts/device/session28_b.sh OUT — session 28's call for an H200 (binaries of bfeef8b built on the Debian machine:
# pack_prebuilt.sh BUILD_DIR, carry .devbin).
# 1. The GPU tests the lagged FP8 merge touches (FP8, skinny, split-K).
# 2. Issue 9 on the H200 (nothing since session 20): the bf16 / fp16 suite, then the test half every 3rd row (never
#    fitted on): flux / cuBLAS and flux_hooks / flux.
# 3. Issue 13 on the H200 with the lagged kernels (they ran on an H100 only): the FP8 suite, the FP8 test half at
#    M >= 128 every 3rd row.
# LIMIT (s, default 560): the call's budget; steps that would not fit are skipped and say so.
set -uo pipefail
source scripts/device/prebuilt.sh "$1"
tag="${TAG:-s28b}"
cat "$out/gpu.txt" >> "$out/tests.log"
step tests.log 150 flux_gpu_tests --gtest_color=no --gtest_filter='Fp8GemmGpu*:SkinnyGpu*:SplitKGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests? from .* ran" "$out/tests.log" | tail -8
run_if 80 main.log 70 flux-bench gemm --iters 20 --json "$out/gemm_main_${gpu_tag}_${tag}.jsonl"
run_if 60 fp8.log 40 flux-bench gemm --dtypes e4m3 --iters 20 --json "$out/gemm_main_e4m3_${gpu_tag}_${tag}.jsonl"
run_if 170 bench.log 160 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_every3_${gpu_tag}_${tag}.jsonl"
l=$(( $(left) - 10 ))
run_if 70 fp8test.log $l flux-bench gemm --corpus test --corpus-every 3 --corpus-min-m 128 --dtypes e4m3 --iters 20 \
  --warmup 3 --json "$out/gemm_corpus_test_every3_e4m3_m128_${gpu_tag}_${tag}.jsonl"
echo "done at $(( $(date +%s) - T0 )) s"
# The tool returns at most 8 files from OUT: the JSON lines travel in one tarball.
(cd "$out" && tar czf results_${tag}.tgz *.jsonl && rm -f *.jsonl)
exit $status
