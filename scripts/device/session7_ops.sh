#!/usr/bin/env bash
# scripts/device/session7_ops.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the C++ tree with
# tests; the FP8 and GEMM core tests; flux-bench gemm in e4m3 on the 18 suite shapes (per-tensor and per-row /
# column scales) against cuBLASLt FP8; the fused ops' jobs after "decide once" (the op passes its selection to
# the GEMM): GEMM+RS and AG+GEMM correctness and graph replay at W = 1..8 (MPS), every GEMM+AR job.
source scripts/device/build_tree.sh "$1"
step tests.log 120 flux_gpu_tests --gtest_filter='Fp8GemmGpu.*:GemmCoreGpu.*:CublasGemmGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/tests.log" | tail -6
step fp8_suite.log 100 flux-bench gemm --dtypes e4m3 --scale per-tensor --iters 20 --json "$out/gemm_fp8_tensor.jsonl"
step fp8_suite.log 100 flux-bench gemm --dtypes e4m3 --scale per-row-col --iters 20 --json "$out/gemm_fp8_rowcol.jsonl"
grep -E "over|skipped|FAIL" "$out/fp8_suite.log" | tail -8
step ops.log 300 flux_gpu_tests --gtest_filter='Jobs/GemmRsGpu.ProbeJob/W*_correctness:Jobs/GemmRsGpu.ProbeJob/W*_graph:Jobs/AgGemmGpu.ProbeJob/W*_correctness:Jobs/AgGemmGpu.ProbeJob/W*_graph:Jobs/GemmArGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]|^\[       OK \]" "$out/ops.log" | tail -40
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
