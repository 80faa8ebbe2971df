#!/usr/bin/env bash
# scripts/device/session17_d.sh OUT — what the extra instructions of the short-K GEMM are (issue 9; s17b found ours
# issue ~1.7x cuBLAS's at 8192 x 4096 x 512 with the same tile): ncu InstructionStats and SourceCounters of our
# 128x128 ping-pong kernel and of cuBLAS's kernel at that shape (clocks untouched).
source scripts/device/build_tree.sh "$1" notests
for who in flux cublas; do
  if [ $who = flux ]; then regex=device_kernel; skip=6; envs="FLUX_GEMM_CONFIG=128x128x64_pingpong_c1x2"
  else regex='nvjet|xmma|cutlass3x'; skip=56; envs="FLUX_GEMM_STREAM_K=off"; fi
  step ncu_instr.log 90 env $envs ncu --clock-control none -k "regex:$regex" --launch-skip $skip --launch-count 1 \
    --section InstructionStats --section SourceCounters --section SpeedOfLight \
    /tmp/bin/flux-bench gemm --shapes 8192x4096x512 --dtypes bf16 --iters 20 --warmup 1
done
rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
