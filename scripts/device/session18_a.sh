#!/usr/bin/env bash
# scripts/device/session18_a.sh OUT — is the short-K loss the epilogue's subtiles (issue 9)? At 8192 x 4096 x 512
# cuBLAS runs our ping-pong's 128x128x64 tile at 83% SM throughput, ours at 53% (s17b); both CUTLASS epilogues here
# store 64 x 32 (ping-pong) / 128 x 32 (cooperative) subtiles, each a fence, two named-barrier syncs and a wait for
# the previous TMA store: 8 such steps per 128 x 128 tile, a serial chain the short mainloop may not hide.
# The experimental configs (gemm_config.h, rated 0: never picked, forced only) take wider subtiles:
#   128x128x64_pingpong_c1x2_e128 (64 x 128), 256x128x64_coop_c1x2_e64 (128 x 64), and
#   128x128x64_pingpong_c2x1_e128 (cuBLAS's cluster orientation, 2 x 1).
# 1. Build the tree without tests (flux-bench checks every result against cuBLAS).
# 2. Each config forced over the same 10 shapes (not from the corpus's test half), bf16, cuBLAS in every run.
# 3. ncu warp-state detail of the base ping-pong, its e128 variant and cuBLAS at 8192 x 4096 x 512.
source scripts/device/build_tree.sh "$1" notests
tag="${TAG:-s18a}"
cat "$out/gpu.txt" >> "$out/bench.log"; rm -f "$out/gpu.txt"
shapes=8192x4096x512,8192x4096x1024,8192x4096x4096,4096x6144x1024,4096x14336x2048,2048x4096x512,2048x8192x1024,1024x4096x1024,1024x12288x4096,8192x1536x768
for cfg in 128x128x64_pingpong_c1x2 128x128x64_pingpong_c1x2_e128 128x128x64_pingpong_c2x1_e128 \
           256x128x64_coop_c1x2 256x128x64_coop_c1x2_e64 128x256x64_coop_c2x1 auto; do
  envs=(FLUX_GEMM_STREAM_K=off); [ $cfg != auto ] && envs+=(FLUX_GEMM_CONFIG=$cfg)
  step bench.log 90 env "${envs[@]}" flux-bench gemm --shapes $shapes --dtypes bf16 --iters 30 --warmup 5 \
    --json "$out/gemm_epilogue_subtile_${cfg}_h200_${tag}.jsonl"
done
cat "$out"/gemm_epilogue_subtile_*_h200_${tag}.jsonl > "$out/gemm_epilogue_subtile_h200_${tag}.jsonl"
rm -f "$out"/gemm_epilogue_subtile_*x*_h200_${tag}.jsonl "$out"/gemm_epilogue_subtile_auto_h200_${tag}.jsonl
grep -E "^[0-9]+x[0-9]+x[0-9]+ |=== bench.log: env" "$out/bench.log" | cut -c1-200 > "$out/summary.txt"
for who in 128x128x64_pingpong_c1x2 128x128x64_pingpong_c1x2_e128 cublas; do
  if [ $who = cublas ]; then regex='nvjet|xmma|cutlass3x'; skip=56; envs=(FLUX_GEMM_STREAM_K=off)
  else regex=device_kernel; skip=6; envs=(FLUX_GEMM_CONFIG=$who); fi
  step ncu.log 60 env "${envs[@]}" ncu --clock-control none -k "regex:$regex" --launch-skip $skip --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section InstructionStats --print-details all \
    /tmp/bin/flux-bench gemm --shapes 8192x4096x512 --dtypes bf16 --iters 20 --warmup 1
done
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
