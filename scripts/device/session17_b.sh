#!/usr/bin/env bash
# scripts/device/session17_b.sh OUT — where the short-K time goes (issue 9). On the tuning half's M > 2048 sweep
# (s16a) every config's best variant ran at 0.73-0.87 of cuBLAS at K = 512 and ~0.81 at K = 1024, where cuBLAS keeps
# 660-780 TFLOP/s: a per-tile cost that long K hides. ncu (clocks untouched) of the GEMM kernel, 128x128 ping-pong
# and 256x128 cooperative, and of cuBLAS's kernel, at 8192 x 4096 x 512 (short K) and 8192 x 4096 x 4096 (long K).
source scripts/device/build_tree.sh "$1" notests
ncu_run() {  # ncu_run LOG SHAPE KERNEL_REGEX SKIP ENV...
  local log="$1" shape="$2" regex="$3" skip="$4"; shift 4
  step "$log" 100 env "$@" ncu --clock-control none -k "regex:$regex" --launch-skip "$skip" --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
    --section MemoryWorkloadAnalysis /tmp/bin/flux-bench gemm --shapes "$shape" --dtypes bf16 --iters 20 --warmup 1
}
for shape in 8192x4096x512 8192x4096x4096; do
  ncu_run ncu.log $shape device_kernel 6 FLUX_GEMM_CONFIG=128x128x64_pingpong_c1x2
  ncu_run ncu.log $shape device_kernel 6 FLUX_GEMM_CONFIG=256x128x64_coop_c1x2
  ncu_run ncu.log $shape 'nvjet|xmma|cutlass3x' 56
done
grep -E "^  [a-zA-Z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Registers Per|Grid Size|Cluster Size|Warp Cycles Per Issued|Issue Slots Busy|Stall|No Eligible|L2 Hit|Shared Memory Configuration Size|Dynamic Shared" \
  "$out/ncu.log" > "$out/ncu_summary.txt"
head -120 "$out/ncu_summary.txt"
rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
