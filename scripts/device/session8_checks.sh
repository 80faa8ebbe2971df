#!/usr/bin/env bash
# scripts/device/session8_checks.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the C++ tree with
# tests; compute-sanitizer memcheck and racecheck of the FP8 fused ops (fp8_ops_probe small: AG+GEMM with its row
# scales gathered, GEMM+RS, GEMM+AR, every path) at W = 2; ncu (clocks untouched) of the FP8 GEMM core and
# cuBLASLt FP8 on one suite shape, for the core's gap (issue 13).
source scripts/device/build_tree.sh "$1"
probe="$PWD/build/tests/flux_fp8_ops_probe"
step sanitizer.log 90 flux-run -n 2 -- compute-sanitizer --tool memcheck --error-exitcode 9 "$probe" small
step sanitizer.log 90 flux-run -n 2 -- compute-sanitizer --tool racecheck --error-exitcode 9 "$probe" small
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|probe (PASSED|FAIL)" "$out/sanitizer.log" | sort | uniq -c
sec="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis"
bench="flux-bench gemm --dtypes e4m3 --shapes 4096x12288x12288 --iters 20 --warmup 1 --no-check"
# Ours (CUTLASS's device_kernel) after two launches; cuBLASLt's (nvjet / xmma) after its tuning launches.
step ncu.log 100 ncu --clock-control none $sec -k regex:device_kernel --launch-skip 2 --launch-count 2 $bench
step ncu.log 100 ncu --clock-control none $sec -k regex:'nvjet|xmma|cutlass3x' --launch-skip 56 --launch-count 2 $bench
grep -E "^  [a-zA-Z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Block Size|Grid Size|Cluster Size|Shared Memory Config|Dynamic Shared|Warp Cycles Per Issued|Issue Slots Busy" \
  "$out/ncu.log" | head -80
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
