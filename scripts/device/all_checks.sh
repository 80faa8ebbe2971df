#!/usr/bin/env bash
# scripts/device/all_checks.sh BIN_DIR OUT_DIR [gemm bench args...]
# Everything that needs the GPU, in one call: the GPU tests (GEMM core, cuBLAS baseline, multi-rank
# runtime jobs under flux-run with and without MPS), compute-sanitizer memcheck on the small hooked
# GEMM, flux-bench gemm, and flux-bench p2p between two ranks on the GPU(s) present, time-sliced and
# under MPS. At most 8 files land in OUT_DIR. Exits non-zero if a step failed.
source "$(dirname "$0")/common.sh" "$@"
shift 2
step gpu_tests.log 420 "$bin/flux_gpu_tests" --gtest_color=no
step memcheck.log 240 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/flux_gpu_tests" --gtest_filter='GemmCoreGpu.SanitizerSmallCase'
step bench_gemm.log 420 "$bin/flux-bench" gemm --json "$out/gemm.jsonl" "$@"
step p2p.log 120 "$bin/flux-run" -n 2 --mps -- "$bin/flux-bench" p2p --json "$out/p2p_mps.jsonl"
step p2p.log 120 "$bin/flux-run" -n 2 -- "$bin/flux-bench" p2p --rounds 50 --json "$out/p2p_timesliced.jsonl"
exit $status
