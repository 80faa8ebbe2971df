#!/usr/bin/env bash
# scripts/device/session27_b.sh OUT — session 27's first call, from binaries built on the Debian machine (carry .devbin,
# pack_prebuilt.sh: flux_gpu_tests, flux-bench of the lagged FP8 promotion (src/gemm/kernel/lagged_fp8_mainloop.cuh),
# flux-bench-old of main before it (CUTLASS's FP8 mainloop, promotion every 16 MMAs by default)).
# 1. The FP8 GEMM tests on the lagged mainloop, plus the skinny and split-K tests (9df09de's first run).
# 2. Lagged against CUTLASS's mainloop: the FP8 suite (old, new, old; old also at interval 4, the lagged kernel's
#    sums, and 64, CUTLASS's fastest), the FP8 test half at M >= 128 and at M <= 64 (every 3rd row, never fitted on), old then new.
# 3. The FP8 tuning half's decode sweep (M <= 64, every 3rd row) with the lagged kernels, for the decode terms' fit.
set -uo pipefail
source scripts/device/prebuilt.sh "$1"
tag="${TAG:-s27b}"
cat "$out/gpu.txt" >> "$out/tests.log"
# Registers and stack (spills) of the lagged FP8 kernels (cuobjdump: not in the Debian machine's toolkit).
(cuobjdump -res-usage /tmp/bin/flux-bench 2>&1 | grep -A1 "LaggedFp8Mma" | grep -o "REG:[0-9]* STACK:[0-9]*" | sort | uniq -c) >> "$out/tests.log"
tail -4 "$out/tests.log"
step tests.log 150 flux_gpu_tests --gtest_color=no --gtest_filter='Fp8GemmGpu*:SkinnyGpu*:SplitKGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests? from .* ran" "$out/tests.log" | tail -8
for v in old new old2 old4 old64; do
  b=flux-bench; [ $v != new ] && b=flux-bench-old
  e=(); [ $v = old4 ] && e=(env FLUX_GEMM_FP8_PROMOTION=4); [ $v = old64 ] && e=(env FLUX_GEMM_FP8_PROMOTION=64)
  [ "$(left)" -gt 60 ] && step fp8.log 40 "${e[@]}" $b gemm --dtypes e4m3 --iters 20 --json "$out/gemm_main_e4m3_${v}_${gpu_tag}_${tag}.jsonl"
  grep -E "median" "$out/fp8.log" | tail -1
done
for half in "m128:--corpus-min-m 128" "m64:--corpus-max-m 64"; do
  for v in old new; do
    b=flux-bench; [ $v = old ] && b=flux-bench-old
    [ "$(left)" -gt 120 ] && step bench.log 100 $b gemm --corpus test --corpus-every 3 ${half#*:} --dtypes e4m3 --iters 20 \
      --warmup 3 --json "$out/gemm_corpus_test_every3_e4m3_${half%%:*}_${v}_${gpu_tag}_${tag}.jsonl"
  done
done
l=$(( $(left) - 10 ))
[ $l -gt 30 ] && step sweep.log $l flux-bench gemm --corpus tune --corpus-max-m 64 --corpus-every 3 --dtypes e4m3 \
  --sweep --sweep-iters 10 --iters 20 --warmup 2 --json "$out/gemm_sweep_tune_m1_64_every3_e4m3_${gpu_tag}_${tag}.jsonl"
echo "done at $(( $(date +%s) - T0 )) s"
# The tool returns at most 8 files from OUT: the JSON lines travel in one tarball.
(cd "$out" && tar czf results_${tag}.tgz *.jsonl && rm -f *.jsonl)
exit $status
