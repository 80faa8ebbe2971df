#!/usr/bin/env bash
# scripts/device/session12_c.sh OUT — why does 128x128 cooperative stream-K run at about half its ideal speed at
# 2048 x 1152 x 3584 (80 units of 2 tiles on 66 clusters: 1.2 units' work per cluster vs 2 whole)? ncu (clocks
# untouched) of the GEMM kernel with stream-K forced on and off, and of cuBLAS's kernel, same shape.
source scripts/device/build_tree.sh "$1" notests
shape=2048x1152x3584
ncu_run() {  # ncu_run LOG KERNEL_REGEX SKIP ENV...
  local log="$1" regex="$2" skip="$3"; shift 3
  step "$log" 120 env "$@" ncu --clock-control none -k "regex:$regex" --launch-skip "$skip" --launch-count 2 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    /tmp/bin/flux-bench gemm --shapes $shape --dtypes bf16 --iters 20 --warmup 1
}
ncu_run ncu.log device_kernel 6 FLUX_GEMM_CONFIG=128x128x64_coop_c1x2 FLUX_GEMM_STREAM_K=on
ncu_run ncu.log device_kernel 6 FLUX_GEMM_CONFIG=128x128x64_coop_c1x2 FLUX_GEMM_STREAM_K=off
# cuBLASLt's kernel after its tuning launches (as session8_checks.sh).
ncu_run ncu.log 'nvjet|xmma|cutlass3x' 56 FLUX_GEMM_STREAM_K=off
grep -E "^  [a-zA-Z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Grid Size|Cluster Size|Warp Cycles Per Issued|Issue Slots Busy" \
  "$out/ncu.log" | head -80
rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
