#!/usr/bin/env bash
# scripts/device/session10_a.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the C++ tree with tests;
# the CPU tests; every fused-op GPU job (the ops now dispatch through their path tables' supported / run entries:
# issue 12's last Deliver-1 item), the faults jobs with them.
source scripts/device/build_tree.sh "$1"
step cpu.log 120 build/tests/flux_cpu_tests
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/cpu.log" | tail -8
step ops.log 360 flux_gpu_tests --gtest_filter='Jobs/*:GemmRsGpuFaults.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/ops.log" | tail -8
rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
