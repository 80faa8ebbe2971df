#!/usr/bin/env bash
# scripts/device/session23_b.sh OUT — session 23's judge, from binaries built on the Debian machine (no device build:
# carry .devbin with flux-bench, flux-run and flux_gemm_rs_probe, gzipped: the tracked tree (~46 MiB) leaves room for
# no more under the 64 MiB carry; they run from /tmp/bin).
# 1. The test half every 3rd row, bf16 and fp16 (the 826 rows of s20a / s22b / s22d): flux / cuBLAS, flux_hooks / flux,
#    with the 128x144 / 128x112 / 128x176 configs admitted (rates fitted on s23a's tuning-half sweep).
# 2. The suite (what the README's main command runs after its build: flux-bench gemm --iters 20).
# 3. GEMM+RS's probe jobs as its GPU tests run them (flux-run, W = 1 time-sliced and W = 2 / 4 under MPS: correctness,
#    graph): its GEMMs publish per tile and now pick the new configs too.
set -uo pipefail
source scripts/device/prebuilt.sh "$1"
tag="${TAG:-s23b}"
cat "$out/gpu.txt" >> "$out/bench.log"; rm -f "$out/gpu.txt"
step bench.log 160 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_every3_${gpu_tag}_${tag}.jsonl"
step main.log 70 flux-bench gemm --iters 20 --json "$out/gemm_main_${gpu_tag}_${tag}.jsonl"
grep -E "median" "$out/main.log" | tail -4
export FLUX_WAIT_TIMEOUT_MS=20000 FLUX_RDZV_TIMEOUT_MS=120000
for job in "1 - correctness" "2 --mps correctness" "4 --mps correctness" "2 --mps graph" "1 - graph"; do
  read -r w mps mode <<< "$job"; [ "$mps" = "-" ] && mps=""
  left=$(( ${LIMIT:-545} - ($(date +%s) - T0) ))
  [ $left -gt 20 ] && step ops.log $left flux-run -n "$w" --timeout 400 $mps -- /tmp/bin/flux_gemm_rs_probe "$mode"
done
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
