#!/usr/bin/env bash
# scripts/device/session13_a.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the new 128x192 and
# 128x160 cooperative c2x1 configs (tile widths that quantize N = 1152 / 1280 / 2304 / 4608 in fewer waves).
# Their GPU tests (every kernel vs fp64, the hook tests, stream-K), the split-K wait test alone in its own process
# (the lazy-loading fix of session 12), a --sweep of the corpus's tuning half at M = 128..2048 (every 3rd row:
# 5 M values per series, so the stride rotates through them) to fit the rates, and the names of cuBLAS's kernels
# on four tuning-half shapes (ncu, one metric).
source scripts/device/build_tree.sh "$1"
step gpu.log 150 flux_gpu_tests --gtest_filter='GemmCoreGpu.*:StreamKGpu.*'
grep -E "PASSED|FAILED" "$out/gpu.log" | head -8
step ctest.log 60 ctest --test-dir build -R 'SplitKGpu.WaitBeforeLoadHoldsEverySlice' --output-on-failure
step sweep.log 230 flux-bench gemm --corpus tune --corpus-min-m 128 --corpus-max-m 2048 --corpus-every 3 --dtypes bf16 \
  --sweep --iters 20 --warmup 3 --json "$out/gemm_sweep_tune_m128_2048_every3_h200_20261203_s13a.jsonl"
step ncu.log 60 ncu --clock-control none -k 'regex:nvjet|xmma|cublas' --metrics gpu__time_duration.sum \
  flux-bench gemm --shapes 2048x7168x512,2048x1280x8192,2048x4608x1024,128x4096x512 --dtypes bf16 --iters 20 --warmup 1
grep -vE "^==PROF==|^==WARNING==" "$out/ncu.log" | sed -E 's/^  (nvjet[^ ]*|void [^<]*<[^ ]{0,60}).* \(([0-9]+, [0-9]+, [0-9]+)\)x.*/  \1 \2/' > "$out/ncu_cublas_kernels.txt"
rm -f "$out/ncu.log"
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
