#!/usr/bin/env bash
# scripts/device/session7_fp8.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the C++ tree with
# tests; the FP8 GEMM core tests, the GEMM core tests (decide once: GemmArgs::selection), the cuBLAS baseline
# tests; flux-bench gemm on the 18 suite shapes in e4m3 against cuBLASLt FP8, per-tensor and per-row / column
# scales, bf16 out.
source scripts/device/build_tree.sh "$1"
step tests.log 200 flux_gpu_tests --gtest_filter='Fp8GemmGpu.*:GemmCoreGpu.*:CublasGemmGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/tests.log" | tail -8
step fp8_suite.log 120 flux-bench gemm --dtypes e4m3 --scale per-tensor --iters 20 --json "$out/gemm_fp8_tensor.jsonl"
step fp8_suite.log 120 flux-bench gemm --dtypes e4m3 --scale per-row-col --iters 20 --json "$out/gemm_fp8_rowcol.jsonl"
grep -E "over|skipped|FAIL" "$out/fp8_suite.log" | tail -8
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
