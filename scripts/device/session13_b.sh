#!/usr/bin/env bash
# scripts/device/session13_b.sh OUT — the heuristic refitted on the tuning half (kRelativeRateMid, swap-AB up to
# M = 1024, kReduceFixedUs, kStreamMaxM; scripts/corpus/fit_heuristic.py --grid rates over session13_a's sweep and
# the decode sweep of 2026-12-01). The GEMM core's GPU tests (the stream-K test counts fixed), then the judge: the
# corpus's test half, every 3rd row (the rows of session 6's run: every M value), bf16 and fp16, cuBLAS in the same
# run; the README's main command last.
source scripts/device/build_tree.sh "$1"
step gpu.log 60 flux_gpu_tests --gtest_filter='GemmCoreGpu.*:StreamKGpu.*:SplitKGpu.*:SkinnyGpu.*'
grep -E "PASSED|FAILED" "$out/gpu.log" | head -8
step bench.log 250 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_every3_h200_20261203_s13b.jsonl"
grep -E "median" "$out/bench.log" | tail -6
step main.log 60 ./scripts/main.sh --iters 20
cp bench/results/gemm_2026*.jsonl "$out/gemm_main_h200_20261203_s13b.jsonl" 2>/dev/null
grep -E "median|rc=" "$out/main.log" | tail -4
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
