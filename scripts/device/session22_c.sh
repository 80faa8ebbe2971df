#!/usr/bin/env bash
# scripts/device/session22_c.sh OUT — the ping-pong configs' raster rule (gemm_config.cpp kPingpongSwizzle: the shorter
# dimension of units fastest, fitted on the tuning half's sweeps) judged on an H200, the bar's GPU (session 22 judged it
# on an H100 only, s22d; written in session 22, never run as it stands).
# 1. Build the tree with the tests (carry the CUTLASS wheel and .devdeps).
# 2. The GEMM core's GPU tests.
# 3. The test half every 3rd row, bf16 and fp16 (the 826 rows of s20a on the H200, s22b / s22d on an H100).
# 4. --attribution (each hook alone) on shapes whose pick is cooperative with several tiles per CTA.
# 5. The README's main command (the suite), then the fused ops' GPU tests in the time left (LIMIT, default 380 s; a cold start leaves little).
source scripts/device/build_tree.sh "$1"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | grep -o -E "H100|H200" | tr 'H' 'h')
tag="${gpu:-gpu}_${TAG:-s22c}"
rm -f bench/results/gemm_2026????T*.jsonl
cat "$out/gpu.txt" >> "$out/bench.log"; rm -f "$out/gpu.txt"
step core.log 60 flux_gpu_tests --gtest_filter='GemmCoreGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/core.log" | head -20
step bench.log 150 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_every3_${tag}.jsonl"
grep -E "median" "$out/bench.log" | tail -12
step bench.log 60 flux-bench gemm --attribution --dtypes bf16 --iters 20 --warmup 3 \
  --shapes 1024x12288x12288,1024x24576x12288,1024x12288x6144,2048x7168x2048,1024x7168x2304,2048x4096x512 \
  --json "$out/gemm_attribution_${tag}.jsonl"
step main.log 60 ./scripts/main.sh --iters 20
grep -E "median|results|wrote" "$out/main.log" | tail -6
left=$(( ${LIMIT:-380} - ($(date +%s) - T0) ))
[ $left -gt 20 ] && step ops.log $left ctest --test-dir build -L gpu -R "GemmRs|GemmAr|AgGemm" -j 1 --output-on-failure
grep -E "tests passed|tests failed|Failed  |\*\*\*Failed" "$out/ops.log" | head -20
cp bench/results/gemm_2026????T*.jsonl "$out/" 2>/dev/null
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
