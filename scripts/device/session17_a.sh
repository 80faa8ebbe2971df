#!/usr/bin/env bash
# scripts/device/session17_a.sh OUT — one device call (carry the CUTLASS wheel and .devdeps).
# Stream-K compiled only into 128x128x64 cooperative c1x2 (ConfigShape::stream_k): in the other cooperative kernels
# its scheduler state and fixup spilled registers (ptxas -v: 256x128 / 128x256 240 B of spill stores, 128x192 72,
# FP8 128x128x128 56; none without it) in every whole-tile run, though stream-K is off by default.
# 1. Build with the tests; the stream-K GPU tests (now on 128x128 cooperative only) and the GEMM core's.
# 2. The judge, cuBLAS in the same run: the test half's every-3rd rows (M = 1, 8, 64, 512, 4096; bf16 and fp16),
#    the rows of s15b (M = 512: 256x128 / 128x192 cooperative picks) and s16a (M = 4096 under the fitted table).
# 3. FP8 on the suite shapes (issue 13: the FP8 cooperative kernels lost their spills too), per-tensor scales.
# 4. The README's main command (the suite, bf16 and fp16).
# Files back: checks.log, bench.log, three result files, build.log (on a failure).
source scripts/device/build_tree.sh "$1"
tag="${TAG:-s17a}"
cat "$out/gpu.txt" >> "$out/checks.log"; rm -f "$out/gpu.txt"
step checks.log 90 flux_gpu_tests --gtest_filter='StreamKGpu.*:GemmCoreGpu.*'
grep -E "PASSED|FAILED" "$out/checks.log" | head -12
left=$(( 560 - ($(date +%s) - T0) - 110 ))
[ $left -gt 170 ] && left=170
step bench.log $left flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_every3_h200_${tag}.jsonl"
grep -E "median" "$out/bench.log" | tail -6
step bench.log 60 flux-bench gemm --dtypes e4m3 --scale per-tensor --iters 20 --warmup 3 \
  --json "$out/gemm_fp8_suite_tensor_h200_${tag}.jsonl"
grep -E "median" "$out/bench.log" | tail -3
rm -f bench/results/gemm_2026????T*.jsonl
left=$(( 590 - ($(date +%s) - T0) ))
step bench.log $left ./scripts/main.sh --iters 20
cp bench/results/gemm_2026????T*.jsonl "$out/gemm_main_h200_${tag}.jsonl" 2>/dev/null
grep -E "median|rc=" "$out/bench.log" | tail -4
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
