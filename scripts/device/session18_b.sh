#!/usr/bin/env bash
# scripts/device/session18_b.sh OUT — the scheduler's per-tile step without 64-bit division (src/gemm/fast_tile_order.h;
# issue 9's short-K loss). s18a found wider epilogue subtiles no remedy (ping-pong 64 x 128: 0.97-1.03x of 64 x 32)
# while ncu shows both kernels stalled on barriers, ours issuing 1.7x the instructions: the per-tile work every
# warp runs (OrderedTileScheduler: four 64-bit divisions per tile) is the next suspect.
# 1. Build the tree with the tests (carry the CUTLASS wheel and .devdeps).
# 2. The GEMM core's GPU tests (core, split-K, stream-K, FP8, skinny: every path of the scheduler).
# 3. s18a's configs over s18a's 10 shapes (not from the corpus's test half), bf16, cuBLAS in every run.
# 4. ncu of the base ping-pong at 8192 x 4096 x 512 (instructions, speed of light), as s17d / s18a.
source scripts/device/build_tree.sh "$1"
tag="${TAG:-s18b}"
cat "$out/gpu.txt" >> "$out/bench.log"; rm -f "$out/gpu.txt"
step tests.log 200 ctest --test-dir build -L gpu -R "GemmCoreGpu|SplitKGpu|StreamKGpu|Fp8GemmGpu|SkinnyGpu" -j 1 \
  --output-on-failure
grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/tests.log" | head -20
shapes=8192x4096x512,8192x4096x1024,8192x4096x4096,4096x6144x1024,4096x14336x2048,2048x4096x512,2048x8192x1024,1024x4096x1024,1024x12288x4096,8192x1536x768
for cfg in 128x128x64_pingpong_c1x2 128x128x64_pingpong_c1x2_e128 128x128x64_pingpong_c2x1_e128 \
           256x128x64_coop_c1x2 256x128x64_coop_c1x2_e64 128x256x64_coop_c2x1 auto; do
  envs=(FLUX_GEMM_STREAM_K=off); [ $cfg != auto ] && envs+=(FLUX_GEMM_CONFIG=$cfg)
  step bench.log 90 env "${envs[@]}" flux-bench gemm --shapes $shapes --dtypes bf16 --iters 30 --warmup 5 \
    --json "$out/part_${cfg}.jsonl"
done
cat "$out"/part_*.jsonl > "$out/gemm_epilogue_subtile_h200_${tag}.jsonl"; rm -f "$out"/part_*.jsonl
step ncu.log 60 env FLUX_GEMM_CONFIG=128x128x64_pingpong_c1x2 ncu --clock-control none -k regex:device_kernel \
  --launch-skip 6 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section InstructionStats \
  /tmp/bin/flux-bench gemm --shapes 8192x4096x512 --dtypes bf16 --iters 20 --warmup 1
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
