#!/usr/bin/env bash
# scripts/device/session19_c.sh OUT — the two decode configs of session 19 after s19a / s19b:
# 8x16x512_gemv (the GEMV kernel with the probe's fastest shape: 8 warps x 2 rows x 4 loads, 4 CTAs per SM; a
# candidate at M = 1) and 16x64x128_pingpong_swapab_c1x1 (cuBLAS's decode structure: a 64-row tile of the weight's N
# along WGMMA's M, 16 rows of A along its N, 128 deep in K, TMA, one CTA per cluster; cuBLAS's M = 1 kernels are
# cublasLt tile 64x8).
# 1. Build the tree with the tests; the skinny / GEMM / split-K GPU tests (every config against fp64, hooks, graphs).
# 2. Sweep of the corpus's tuning half at decode (M <= 64, every 3rd row, bf16; every config x order x split-K).
# 3. The test half's decode rows (M <= 64, every 3rd, bf16 and fp16) with the committed (first-estimate) constants.
source scripts/device/build_tree.sh "$1"
tag="${TAG:-s19c}"
cat "$out/gpu.txt" >> "$out/checks.log"; rm -f "$out/gpu.txt"
step tests.log 120 flux_gpu_tests --gtest_filter='SkinnyGpu*:GemmCoreGpu*:SplitKGpu*'
grep -E "PASSED|FAILED|Failure" "$out/tests.log" | head -20
dec="$out/gemm_sweep_tune_m1_64_every3_h200_${tag}.jsonl"
step checks.log 200 flux-bench gemm --corpus tune --corpus-max-m 64 --corpus-every 3 --dtypes bf16 --sweep \
  --sweep-iters 10 --iters 20 --warmup 2 --json "$dec"
echo "$(grep -c '"impl": "cublas"' "$dec") shapes in $dec" | tee -a "$out/checks.log"
step bench.log 90 flux-bench gemm --corpus test --corpus-max-m 64 --corpus-every 3 --dtypes bf16,fp16 --iters 20 \
  --warmup 3 --json "$out/gemm_corpus_test_m1_64_every3_h200_${tag}.jsonl"
grep -E "median" "$out/bench.log" | tail -8
gzip -9 "$dec"
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
