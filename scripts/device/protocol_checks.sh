#!/usr/bin/env bash
# scripts/device/protocol_checks.sh BIN_DIR OUT_DIR
# The fused-op protocol on one GPU, in one call: every GPU test (GEMM core incl. graph replay of the
# hooked GEMM; runtime jobs incl. epoch signals, late-GPU waits and fail-stop; GEMM+RS and AG+GEMM jobs
# incl. CUDA-graph capture / 1000 replays of every path at W = 1, 2, 4, 8, the 32-bit epoch wrap,
# fail-stop after a missed call, a SIGKILLed rank in a job started without flux-run, differing knobs);
# then compute-sanitizer memcheck and racecheck of the graph case of both ops at W = 2 (time-sliced).
source "$(dirname "$0")/common.sh" "$@"
shift 2
step gpu_tests.log 480 "$bin/flux_gpu_tests" --gtest_color=no ${GPU_TEST_FILTER:+--gtest_filter=$GPU_TEST_FILTER}
for probe in flux_gemm_rs_probe flux_ag_gemm_probe; do
  for tool in memcheck racecheck; do
    step sanitizer.log 120 "$bin/flux-run" -n 2 -- compute-sanitizer --tool $tool --error-exitcode 9 "$bin/$probe" graph_small
  done
done
exit $status
