#!/usr/bin/env bash
# scripts/device/session14_c.sh OUT — issue 13's first question for the GPU (FP8 core at 0.866 of cuBLASLt FP8 on the
# suite): where the FP8 kernel's time goes beside cuBLASLt's, on one suite shape. The tree without tests, then ncu
# (clocks untouched) of flux-bench gemm --dtypes e4m3 at 4096 x 12288 x 12288 with each FP8 config forced
# (FLUX_GEMM_CONFIG) and cuBLASLt in the same process: speed of light, launch statistics (registers, shared memory:
# the stage count), occupancy and warp-state stalls (the promotion's warpgroup waits show as wait stalls).
# Written in session 14 (no device time) for a later one; never run.
source scripts/device/build_tree.sh "$1" notests
for cfg in 128x128x128_coop_c2x1_e4m3 128x128x128_coop_c1x2_e4m3 64x128x128_pingpong_c1x2_e4m3; do
  step ncu_fp8.log 120 env FLUX_GEMM_CONFIG=$cfg ncu --clock-control none -k 'regex:device_kernel|nvjet|sm90_xmma' \
    --launch-skip 2 --launch-count 2 --section SpeedOfLight --section LaunchStats --section Occupancy \
    --section WarpStateStats flux-bench gemm --dtypes e4m3 --shapes 4096x12288x12288 --iters 20 --warmup 1
done
grep -E "device_kernel|nvjet|Duration|Compute \(SM\) Throughput|Registers Per|Shared Memory Config|Dynamic Shared|Achieved Occupancy|Stall" \
  "$out/ncu_fp8.log" | sed -E 's/^ +//' > "$out/ncu_fp8_summary.txt"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
