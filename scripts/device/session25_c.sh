#!/usr/bin/env bash
# scripts/device/session25_c.sh OUT — session 25's one call for both branches (never ran: the device refused every
# start), from binaries built on the Debian machine (carry .devbin: bin.tar.xz
# made by pack_prebuilt.sh: flux_gpu_tests, the probes, flux-run and flux-bench of wip/fp8-skinny (the FP8 skinny
# config on main), flux-bench-main of main at fd2c6aa (the staggered FP8 promotion), flux-bench-old of main at
# a6ee4cc (before it); no device build).
# 1. Every GPU test of the branch (flux_gpu_tests: the GEMM core, FP8 (every promotion interval, the skinny config and
#    its split-K, graph replay), skinny, split-K, stream-K, runtime jobs, every fused-op probe job: GEMM+RS, AG+GEMM,
#    GEMM+AR, FP8 ops, chaos, fault, graphs, W = 1..8 time-sliced and under MPS): the first run of the delegated
#    publish (a641acc) under the AG+GEMM / GEMM+AR / fault / chaos jobs.
# 2. The staggered promotion, old (a6ee4cc) against main: the FP8 suite (old, main, old) and the FP8 test half at
#    M >= 128 (every 3rd row; never fitted on).
# 3. The FP8 skinny config, main against the branch: the FP8 test half at M <= 64 (every 3rd row; the skinny term's
#    constants are the 16-bit kernels', fitted on bf16 sweeps).
set -uo pipefail
source scripts/device/prebuilt.sh "$1"
tag="${TAG:-s25c}"
cat "$out/gpu.txt" >> "$out/tests.log"
# Under LIMIT 500 (the session's device time short): the tests the changes touch and the never-run fused-op jobs only.
filter='*'
[ "${LIMIT:-560}" -lt 500 ] && filter='Fp8GemmGpu*:SkinnyGpu*:SplitKGpu*:*Fp8OpsGpu*:*AgGemmGpu*:*GemmArGpu*:*GemmRsGpu*fault*:*GemmRsGpu*chaos*'
[ "${LIMIT:-560}" -lt 250 ] && filter='Fp8GemmGpu*:SkinnyGpu*:SplitKGpu*:*Fp8OpsGpu*correctness:*AgGemmGpu*correctness*:*GemmArGpu*correctness*'
step tests.log 240 flux_gpu_tests --gtest_color=no --gtest_filter="$filter"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests? from .* ran" "$out/tests.log" | tail -14
for v in old main old2; do
  b=flux-bench-main; [ $v != main ] && b=flux-bench-old
  [ "$(left)" -gt 60 ] && step fp8.log 40 $b gemm --dtypes e4m3 --iters 20 --json "$out/gemm_main_e4m3_${v}_${gpu_tag}_${tag}.jsonl"
  grep -E "median" "$out/fp8.log" | tail -1
done
dec="--corpus test --corpus-every 3 --corpus-max-m 64 --dtypes e4m3 --iters 20 --warmup 3"
for v in main new; do
  b=flux-bench; [ $v = main ] && b=flux-bench-main
  l=$(left); [ $v = main ] && l=$(( l / 4 )); [ $v = new ] && l=$(( l / 3 ))
  [ $l -gt 20 ] && step bench.log $l $b gemm $dec --json "$out/gemm_corpus_test_every3_e4m3_m64_${v}_${gpu_tag}_${tag}.jsonl"
done
big="--corpus test --corpus-every 3 --corpus-min-m 128 --dtypes e4m3 --iters 20 --warmup 3"
for v in main old; do
  b=flux-bench-main; [ $v = old ] && b=flux-bench-old
  l=$(left); [ $v = main ] && l=$(( l / 2 ))
  [ $l -gt 20 ] && step bench.log $l $b gemm $big --json "$out/gemm_corpus_test_every3_e4m3_m128_${v}_${gpu_tag}_${tag}.jsonl"
done
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
