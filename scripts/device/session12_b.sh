#!/usr/bin/env bash
# scripts/device/session12_b.sh OUT — after session12_a.sh: where does 128x128 cooperative stream-K lose? A --sweep
# (every config x raster x swizzle whole-tile, the stream-K variants, split-K) on shapes where session12_a's forced
# stream-K run lost 15-35% or won, bf16, cuBLAS beside.
source scripts/device/build_tree.sh "$1"
step sweep.log 300 flux-bench gemm --shapes 2048x8192x8192,2048x2048x512,2048x1152x3584,128x4608x1024,2048x4608x4608,128x18432x12288 \
  --dtypes bf16 --sweep --iters 20 --warmup 3 --json "$out/gemm_sweep_sk_probe_h200_20261203_s12b.jsonl"
rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
