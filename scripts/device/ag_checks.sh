#!/usr/bin/env bash
# scripts/device/ag_checks.sh BIN_DIR OUT_DIR
# Everything on one GPU for the fused ops, in one call: all GPU tests (GEMM core, cuBLAS, runtime jobs,
# GEMM+RS and AG+GEMM jobs), flux-bench ag-gemm at W = 1 on the 9 per-rank AG+GEMM shapes (the fused op
# against the GEMM core alone), compute-sanitizer memcheck and racecheck of a small AG+GEMM at W = 2,
# and flux-bench ag-gemm at W = 2 under MPS on two full-layer shapes (correctness of the bench path).
source "$(dirname "$0")/common.sh" "$@"
shift 2
step gpu_tests.log 360 "$bin/flux_gpu_tests" --gtest_color=no ${GPU_TEST_FILTER:+--gtest_filter=$GPU_TEST_FILTER}
ag_shapes=1024x24576x12288,1024x12288x12288,1024x6144x12288,4096x24576x12288,4096x12288x12288,4096x6144x12288,8192x24576x12288,8192x12288x12288,8192x6144x12288
step bench.log 100 "$bin/flux-run" -n 1 -- "$bin/flux-bench" ag-gemm --shapes "$ag_shapes" --json "$out/ag_gemm_w1.jsonl"
step sanitizer.log 60 "$bin/flux-run" -n 2 -- compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/flux_ag_gemm_probe" small
step sanitizer.log 60 "$bin/flux-run" -n 2 -- compute-sanitizer --tool racecheck --error-exitcode 9 "$bin/flux_ag_gemm_probe" small
step bench.log 60 "$bin/flux-run" -n 2 --mps -- "$bin/flux-bench" ag-gemm --shapes 2048x49152x12288,8192x49152x12288 --dtypes bf16 --json "$out/ag_gemm_w2_mps.jsonl"
exit $status
