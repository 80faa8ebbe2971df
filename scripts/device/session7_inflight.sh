#!/usr/bin/env bash
# scripts/device/session7_inflight.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the C++ tree
# with tests, after the gathers' loads in flight went from 2 to 8 per thread (AG+GEMM's block gather, GEMM+AR's
# two-shot gather): AG+GEMM correctness and graph jobs (W = 1..8, MPS), every GEMM+AR job; flux-bench model
# (the gather kernel's own rate on 8 SMs and its bytes in flight against what the link needs).
source scripts/device/build_tree.sh "$1"
step tests.log 100 flux_gpu_tests --gtest_filter='Jobs/AgGemmGpu.ProbeJob/W*_correctness:Jobs/AgGemmGpu.ProbeJob/W*_graph:Jobs/GemmArGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/tests.log" | tail -6
step model.log 90 flux-bench model --json "$out/model.jsonl"
grep -E "in flight|pull" "$out/model.log" | head -6
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
