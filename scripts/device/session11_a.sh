#!/usr/bin/env bash
# scripts/device/session11_a.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the C++ tree with tests;
# stream-K (issue 9): its GPU tests and the core's others, compute-sanitizer memcheck on its small case, then the
# test half's M >= 128 rows (every 4th; bf16) with stream-K auto beside the same build with it off
# (FLUX_GEMM_STREAM_K=off), cuBLAS in both runs.
source scripts/device/build_tree.sh "$1"
step gpu.log 240 flux_gpu_tests --gtest_filter='StreamKGpu.*:SplitKGpu.*:GemmGpu.*:Fp8GemmGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/gpu.log" | tail -12
step memcheck.log 120 compute-sanitizer --tool memcheck /tmp/bin/flux_gpu_tests --gtest_filter='StreamKGpu.SanitizerSmallCase'
grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck.log" | tail -3
step sk_auto.log 200 flux-bench gemm --corpus test --corpus-every 4 --corpus-min-m 128 --dtypes bf16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_m128_every4_sk_auto_h200_20261203_s11.jsonl"
step sk_off.log 200 env FLUX_GEMM_STREAM_K=off /tmp/bin/flux-bench gemm --corpus test --corpus-every 4 --corpus-min-m 128 --dtypes bf16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_m128_every4_sk_off_h200_20261203_s11.jsonl"
tail -4 "$out/sk_auto.log" "$out/sk_off.log"
rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
