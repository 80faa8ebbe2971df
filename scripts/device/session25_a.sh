#!/usr/bin/env bash
# scripts/device/session25_a.sh OUT — session 25's first call, from binaries built on the Debian machine (carry .devbin:
# bin.tar.xz with flux_gpu_tests, the probes it runs (flux-run, flux_runtime_gpu_probe, flux_gemm_rs_probe,
# flux_ag_gemm_probe, flux_gemm_ar_probe, flux_fp8_ops_probe), flux-bench of this tree and flux-bench-old of main
# before the staggered FP8 promotion; no device build).
# 1. Every GPU test (flux_gpu_tests: the GEMM core, FP8 with the staggered promotion at every interval, split-K,
#    stream-K, the runtime jobs and every fused-op probe job: GEMM+RS, AG+GEMM, GEMM+AR, FP8 ops, chaos, fault,
#    graphs, W = 1..8 time-sliced and under MPS): the first run of the delegated publish (a641acc) under the
#    AG+GEMM / GEMM+AR / fault / chaos jobs.
# 2. The staggered FP8 promotion (src/gemm/kernel/fp8_mainloop.cuh) judged against main's kernels, old and new side by
#    side: the FP8 suite (old, new, old) and the FP8 test half at M >= 128 (every 3rd row; never fitted on).
set -uo pipefail
source scripts/device/prebuilt.sh "$1"
tag="${TAG:-s25a}"
cat "$out/gpu.txt" >> "$out/tests.log"
step tests.log 330 flux_gpu_tests --gtest_color=no
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests? from .* ran" "$out/tests.log" | tail -12
for v in old new old2; do
  b=flux-bench; [ $v != new ] && b=flux-bench-old
  step fp8.log 60 $b gemm --dtypes e4m3 --iters 20 --json "$out/gemm_main_e4m3_${v}_${gpu_tag}_${tag}.jsonl"
  grep -E "median" "$out/fp8.log" | tail -2
done
fp8="--corpus test --corpus-every 3 --corpus-min-m 128 --dtypes e4m3 --iters 20 --warmup 3"
for v in new old; do
  b=flux-bench; [ $v = old ] && b=flux-bench-old
  left=$(( ${LIMIT:-560} - ($(date +%s) - T0) )); [ $v = new ] && left=$(( left / 2 ))
  [ $left -gt 20 ] && step fp8.log $left $b gemm $fp8 --json "$out/gemm_corpus_test_every3_e4m3_m128_${v}_${gpu_tag}_${tag}.jsonl"
done
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
