#!/usr/bin/env bash
# scripts/device/session19_d.sh OUT — the judge of session 19's decode work (issue 9), and a sweep for the next config:
# the decode rule (M <= 16: 16x64x128 swap-AB, gemm_config.cpp, fitted on s19c's tuning-half sweep), the GEMV config
# (8x16x512_gemv, M = 1 for plans without swap-AB), and 64x64x128 swap-AB (compiled, not yet a candidate).
# 1. Build the tree with the tests; the skinny / GEMM / split-K GPU tests.
# 2. Sweep of the corpus's tuning half at 17 <= M <= 256, every 3rd row, bf16 (for 64x64x128 swap-AB's rule).
# 3. The test half every 3rd row, bf16 and fp16, cuBLAS in the same run: the same 826 rows as s18d / s17a.
# 4. The README's main command (./scripts/main.sh --iters 20) and the FP8 suite (issue 13).
source scripts/device/build_tree.sh "$1"
tag="${TAG:-s19d}"
cat "$out/gpu.txt" >> "$out/bench.log"; rm -f "$out/gpu.txt"
rm -f bench/results/gemm_2026????T*.jsonl
step tests.log 120 flux_gpu_tests --gtest_filter='SkinnyGpu*:GemmCoreGpu*:SplitKGpu*'
grep -E "PASSED|FAILED|Failure" "$out/tests.log" | head -20
sw="$out/gemm_sweep_tune_m17_256_every3_h200_${tag}.jsonl"
step checks.log 100 flux-bench gemm --corpus tune --corpus-min-m 17 --corpus-max-m 256 --corpus-every 3 --dtypes bf16 \
  --sweep --sweep-iters 10 --iters 20 --warmup 2 --json "$sw"
echo "$(grep -c '"impl": "cublas"' "$sw") shapes in $sw" | tee -a "$out/checks.log"
step bench.log 150 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_every3_h200_${tag}.jsonl"
grep -E "median" "$out/bench.log" | tail -8
step fp8.log 60 flux-bench gemm --dtypes e4m3 --scale per-tensor --iters 20 --warmup 3 \
  --json "$out/gemm_fp8_suite_h200_${tag}.jsonl"
grep -E "median" "$out/fp8.log" | tail -2
step main.log 150 ./scripts/main.sh --iters 20
cp bench/results/gemm_2026????T*.jsonl "$out/gemm_suite_main_h200_${tag}.jsonl" 2>/dev/null; grep -E "median|rc=" "$out/main.log" | tail -6
gzip -9 "$sw"
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
