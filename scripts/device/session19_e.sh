#!/usr/bin/env bash
# scripts/device/session19_e.sh OUT — the final judge of session 19 (issue 9) on the committed heuristic: the decode
# rule at M <= 16 (16x64x128 swap-AB) and 33 <= M <= 64 (64x64x128 swap-AB, fitted on s19d's tuning-half sweep), the
# GEMV at M = 1 for plans without swap-AB.
# 1. Build the tree with the tests.
# 2. The test half every 3rd row, bf16 and fp16, cuBLAS in the same run: the same 826 rows as s19d / s18d.
# 3. Every GPU test (ctest -L gpu: the GEMM core's configs against fp64, hooks, graphs, and the fused ops at
#    W = 1, 2, 4, 8 on one GPU, whose GEMMs may now pick the GEMV at M = 1) in the time left (LIMIT, 560 s).
source scripts/device/build_tree.sh "$1"
tag="${TAG:-s19e}"
cat "$out/gpu.txt" >> "$out/bench.log"; rm -f "$out/gpu.txt"
rm -f bench/results/gemm_2026????T*.jsonl
step bench.log 150 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_every3_h200_${tag}.jsonl"
grep -E "median" "$out/bench.log" | tail -8
left=$(( ${LIMIT:-560} - ($(date +%s) - T0) ))
step tests.log $left ctest --test-dir build -L gpu -j 1 --output-on-failure
grep -E "tests passed|tests failed|Failed  |\*\*\*Failed|Skipped" "$out/tests.log" | head -20
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
