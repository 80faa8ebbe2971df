#!/usr/bin/env bash
# scripts/device/session24_b.sh OUT — the wip/publish-delegate change (the publish's system-scope release on the
# producer warp group's epilogue-load warp, met at a named barrier per tile) judged against main, from binaries
# built on the Debian machine. Carry .devbin with, gzipped: the branch's flux-bench, flux_gpu_tests,
# flux_gemm_rs_probe and flux-run, and main's flux-bench as flux-bench-main.
# 1. The branch's GEMM GPU tests (every publish loop: PublishedTilesAreComplete, chaos delays, graphs, swap-AB,
#    stream-K, FP8), then GEMM+RS's probe jobs (its GEMMs publish per tile; W = 1 time-sliced, W = 2 / 4 under MPS).
# 2. flux_hooks / flux, main against the branch, in alternation (A B A B on the suite, then the test half's
#    M >= 1024 rows every 6th, bf16): `flux-bench gemm --attribution` (flux_publish: the publish alone).
set -uo pipefail
source scripts/device/prebuilt.sh "$1"
tag="${TAG:-s24b}"
cat "$out/gpu.txt" >> "$out/tests.log"
step tests.log 150 flux_gpu_tests --gtest_filter='GemmCoreGpu*:StreamKGpu*:Fp8GemmGpu*:SplitKGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" "$out/tests.log" | head -12
export FLUX_WAIT_TIMEOUT_MS=20000 FLUX_RDZV_TIMEOUT_MS=120000
for job in "1 - correctness" "2 --mps correctness" "4 --mps graph"; do
  read -r w mps mode <<< "$job"; [ "$mps" = "-" ] && mps=""
  step ops.log 60 flux-run -n "$w" --timeout 50 $mps -- /tmp/bin/flux_gemm_rs_probe "$mode"
done
for round in 1 2; do
  for v in main delegate; do
    b=flux-bench; [ $v = main ] && b=flux-bench-main
    step attr.log 45 $b gemm --attribution --iters 20 --json "$out/gemm_attr_suite_${v}_r${round}_${gpu_tag}_${tag}.jsonl"
    grep -E "median" "$out/attr.log" | tail -6
  done
done
for v in main delegate; do
  b=flux-bench; [ $v = main ] && b=flux-bench-main
  left=$(( ${LIMIT:-560} - ($(date +%s) - T0) )); [ $v = main ] && left=$(( left / 2 ))
  [ $left -gt 30 ] && step attr.log $left $b gemm --corpus test --corpus-every 6 \
    --corpus-min-m 1024 --dtypes bf16 --attribution --iters 20 --warmup 3 \
    --json "$out/gemm_attr_test_m1024_every6_${v}_${gpu_tag}_${tag}.jsonl"
  grep -E "median" "$out/attr.log" | tail -6
done
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
