#!/usr/bin/env bash
# scripts/device/session23_b.sh OUT — session 23's judge, from binaries built on the Debian machine (no device build:
# carry .devbin with flux-bench, flux_gpu_tests and the four op probes, gzipped; they run from /tmp/bin, the probes
# beside flux_gpu_tests as the op tests expect).
# 1. The test half every 3rd row, bf16 and fp16 (the 826 rows of s20a / s22b / s22d): flux / cuBLAS, flux_hooks / flux,
#    with the 128x144 / 128x112 / 128x176 configs admitted (rates fitted on s23a's tuning-half sweep).
# 2. The suite (what the README's main command runs after its build: flux-bench gemm --iters 20).
# 3. The fused ops' GPU jobs (their GEMMs now pick the new configs too) in the time left (LIMIT, 545 s).
set -uo pipefail
mkdir -p /tmp/bin
for f in .devbin/*.gz; do gunzip -c "$f" > "/tmp/bin/$(basename "$f" .gz)"; chmod +x "/tmp/bin/$(basename "$f" .gz)"; done
T0=$(date +%s)
source scripts/device/common.sh /tmp/bin "$1"
tag="${TAG:-s23b}"
cat "$out/gpu.txt" >> "$out/bench.log"; rm -f "$out/gpu.txt"
step bench.log 160 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_every3_${gpu_tag}_${tag}.jsonl"
step main.log 70 flux-bench gemm --iters 20 --json "$out/gemm_main_${gpu_tag}_${tag}.jsonl"
grep -E "median" "$out/main.log" | tail -4
left=$(( ${LIMIT:-545} - ($(date +%s) - T0) ))
step ops.log $left flux_gpu_tests --gtest_filter='*AgGemmGpu*:*GemmRsGpu*:*GemmArGpu*:*Fp8OpsGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/ops.log" | head -20
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
