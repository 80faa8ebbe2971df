#!/usr/bin/env bash
# scripts/device/session11_c.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the final tree's stream-K and
# core GPU tests (FLUX_GEMM_STREAM_K's default now off) and the README's main command.
source scripts/device/build_tree.sh "$1"
step gpu.log 240 flux_gpu_tests --gtest_filter='StreamKGpu.*:SplitKGpu.*:Fp8GemmGpu.*:GemmGpu*:GemmCore*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]|tests from .* ran" "$out/gpu.log" | tail -8
step main.log 120 ./scripts/main.sh --iters 20
grep -E "median" "$out/main.log" | tail -3
rm -f "$out/build.log"
exit $status
