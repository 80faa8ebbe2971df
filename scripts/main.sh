#!/usr/bin/env bash
# scripts/main.sh — the main job: set up, build, and run the benchmark suite on the GPU present
# (flux-bench gemm: the GEMM core vs cuBLAS on the 18 per-rank shapes, bf16 and fp16). Results go to
# bench/results/gemm_<date>.jsonl. Without a GPU flux-bench says so and this exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
mkdir -p bench/results
out="bench/results/gemm_$(date -u +%Y%m%dT%H%M%SZ).jsonl"
"${FLUX_BUILD_DIR:-build}/flux-bench" gemm --json "$out" "$@"
echo "main: results in $out"
