#!/usr/bin/env bash
# scripts/device/rs_checks.sh BIN_DIR OUT_DIR
# Everything on one GPU, in one call: the GPU tests (GEMM core, cuBLAS baseline, runtime jobs, GEMM+RS
# jobs for W in {1,2,3,4,8} under MPS and W = 2 time-sliced; GPU_TEST_FILTER narrows them),
# flux-bench gemm (the core vs cuBLAS), flux-bench gemm-rs at W = 1 on the 9 per-rank GEMM+RS shapes
# (the fused op against the GEMM core alone), compute-sanitizer memcheck and racecheck of a small
# GEMM+RS at W = 2, flux-bench gemm-rs at W = 2 under MPS on two full-layer shapes (correctness of the
# bench path; two ranks on one GPU say nothing about NVLink speed) and flux-bench p2p under MPS.
source "$(dirname "$0")/common.sh" "$@"
shift 2
step gpu_tests.log 330 "$bin/flux_gpu_tests" --gtest_color=no ${GPU_TEST_FILTER:+--gtest_filter=$GPU_TEST_FILTER}
step bench.log 120 "$bin/flux-bench" gemm --json "$out/gemm.jsonl" --attribution
rs_shapes=1024x12288x24576,1024x12288x12288,1024x12288x6144,4096x12288x24576,4096x12288x12288,4096x12288x6144,8192x12288x24576,8192x12288x12288,8192x12288x6144
step bench.log 100 "$bin/flux-run" -n 1 -- "$bin/flux-bench" gemm-rs --shapes "$rs_shapes" --json "$out/gemm_rs_w1.jsonl"
step sanitizer.log 60 "$bin/flux-run" -n 2 -- compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/flux_gemm_rs_probe" small
step sanitizer.log 60 "$bin/flux-run" -n 2 -- compute-sanitizer --tool racecheck --error-exitcode 9 "$bin/flux_gemm_rs_probe" small
step bench.log 60 "$bin/flux-run" -n 2 --mps -- "$bin/flux-bench" gemm-rs --shapes 2048x12288x49152,8192x12288x49152 --dtypes bf16 --json "$out/gemm_rs_w2_mps.jsonl"
step bench.log 60 "$bin/flux-run" -n 2 --mps -- "$bin/flux-bench" p2p --json "$out/p2p_mps.jsonl"
exit $status
