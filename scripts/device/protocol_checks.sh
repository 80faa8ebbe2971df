#!/usr/bin/env bash
# scripts/device/protocol_checks.sh BIN_DIR OUT_DIR
# The fused-op protocol on one GPU, in one call: every GPU test (GEMM core incl. graph replay of the
# hooked GEMM; runtime jobs incl. epoch signals, late-GPU waits and fail-stop; GEMM+RS and AG+GEMM jobs
# incl. CUDA-graph capture / 1000 replays of every path at W = 1, 2, 4, 8, the 32-bit epoch wrap,
# fail-stop after a missed call, a SIGKILLed rank in a job started without flux-run, differing knobs);
# then compute-sanitizer memcheck and racecheck of the graph case of both ops at W = 2 (time-sliced),
# with and without chaos mode; then the fused ops' W = 1 bars (flux-bench gemm-rs / ag-gemm at W = 1).
source "$(dirname "$0")/common.sh" "$@"
shift 2
step gpu_tests.log 480 "$bin/flux_gpu_tests" --gtest_color=no ${GPU_TEST_FILTER:+--gtest_filter=$GPU_TEST_FILTER}
for probe in flux_gemm_rs_probe flux_ag_gemm_probe; do
  for tool in memcheck racecheck; do
    step sanitizer.log 120 "$bin/flux-run" -n 2 -- compute-sanitizer --tool $tool --error-exitcode 9 "$bin/$probe" graph_small
    step sanitizer.log 120 env FLUX_CHAOS_SEED=7 "$bin/flux-run" -n 2 -- compute-sanitizer --tool $tool \
      --error-exitcode 9 "$bin/$probe" graph_small
  done
done
# The fused ops' W = 1 bars (fused within 3% of the GEMM core) on the 9 per-rank shapes of each op.
rs_shapes=1024x12288x24576,1024x12288x12288,1024x12288x6144,4096x12288x24576,4096x12288x12288,4096x12288x6144,8192x12288x24576,8192x12288x12288,8192x12288x6144
ag_shapes=1024x24576x12288,1024x12288x12288,1024x6144x12288,4096x24576x12288,4096x12288x12288,4096x6144x12288,8192x24576x12288,8192x12288x12288,8192x6144x12288
step bench.log 150 "$bin/flux-run" -n 1 -- "$bin/flux-bench" gemm-rs --shapes "$rs_shapes" --json "$out/gemm_rs_w1.jsonl"
step bench.log 150 "$bin/flux-run" -n 1 -- "$bin/flux-bench" ag-gemm --shapes "$ag_shapes" --json "$out/ag_gemm_w1.jsonl"
exit $status
