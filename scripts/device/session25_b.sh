#!/usr/bin/env bash
# scripts/device/session25_b.sh OUT — the FP8 skinny config (16x64x256_skinny_e4m3, FP8 split-K) on the GPU, from
# binaries built on the Debian machine (carry .devbin: bin.tar.xz with flux_gpu_tests, the probes it runs, flux-run,
# flux-bench of this tree and flux-bench-old of main without the config; no device build).
# 1. The GPU tests it touches: the FP8 core (every FP8 config incl. the skinny one against the dequantized reference,
#    its split-K, graph replay of a split call with new scales), the 16-bit skinny / split-K / core tests (the skinny
#    kernel template changed), the FP8 fused-op probe jobs (their GEMMs now take the skinny config at decode M).
# 2. The FP8 test half at M <= 64 (every 3rd row; never fitted on: the skinny term's constants are the 16-bit
#    kernels', fitted on bf16 sweeps), old then new then old.
set -uo pipefail
source scripts/device/prebuilt.sh "$1"
tag="${TAG:-s25b}"
cat "$out/gpu.txt" >> "$out/tests.log"
step tests.log 200 flux_gpu_tests --gtest_color=no \
  --gtest_filter='Fp8GemmGpu*:SkinnyGpu*:SplitKGpu*:GemmCoreGpu*:*Fp8OpsGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests? from .* ran" "$out/tests.log" | tail -12
dec="--corpus test --corpus-every 3 --corpus-max-m 64 --dtypes e4m3 --iters 20 --warmup 3"
for v in old new old2; do
  b=flux-bench; [ $v != new ] && b=flux-bench-old
  left=$(( ${LIMIT:-560} - ($(date +%s) - T0) )); [ $v = old ] && left=$(( left / 3 )); [ $v = new ] && left=$(( left / 2 ))
  [ $left -gt 20 ] && step bench.log $left $b gemm $dec --json "$out/gemm_corpus_test_every3_e4m3_m64_${v}_${gpu_tag}_${tag}.jsonl"
done
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
