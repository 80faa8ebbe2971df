#!/usr/bin/env bash
# scripts/device/session26_a.sh OUT — session 26's short call (the device time left after failed starts: ~300 s), from
# binaries built on the Debian machine (carry .devbin, pack_prebuilt.sh: flux_gpu_tests and flux-bench of
# wip/fp8-skinny, flux-bench-main of fd2c6aa (the staggered FP8 promotion), flux-bench-old of a6ee4cc (before it)).
# 1. The GPU tests the two FP8 changes touch: Fp8GemmGpu* (every promotion interval, the FP8 skinny config and its
#    split-K, graph replay), SkinnyGpu*, SplitKGpu* (the 16-bit skinny and split-K kernels share the changed code).
# 2. The staggered promotion: the FP8 suite, old (a6ee4cc) then main (fd2c6aa).
# 3. The FP8 skinny config: the FP8 test half at M <= 64, every 6th row, main (fd2c6aa) then the branch.
set -uo pipefail
source scripts/device/prebuilt.sh "$1"
tag="${TAG:-s26a}"
left() { echo $(( ${LIMIT:-300} - ($(date +%s) - T0) )); }
cat "$out/gpu.txt" >> "$out/tests.log"
step tests.log 110 flux_gpu_tests --gtest_color=no --gtest_filter='Fp8GemmGpu*:SkinnyGpu*:SplitKGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests? from .* ran|^\[       OK \]" "$out/tests.log" | tail -24
for v in old main; do
  b=flux-bench-main; [ $v = old ] && b=flux-bench-old
  [ "$(left)" -gt 40 ] && step fp8.log 35 $b gemm --dtypes e4m3 --iters 20 --json "$out/gemm_main_e4m3_${v}_${gpu_tag}_${tag}.jsonl"
  grep -E "median" "$out/fp8.log" | tail -1
done
dec="--corpus test --corpus-every 6 --corpus-max-m 64 --dtypes e4m3 --iters 20 --warmup 3"
for v in main new; do
  b=flux-bench; [ $v = main ] && b=flux-bench-main
  l=$(( $(left) - 5 )); [ $v = main ] && l=$(( l / 2 ))
  [ $l -gt 15 ] && step bench.log $l $b gemm $dec --json "$out/gemm_corpus_test_every6_e4m3_m64_${v}_${gpu_tag}_${tag}.jsonl"
done
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
