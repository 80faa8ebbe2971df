#!/usr/bin/env bash
# scripts/device/session21_a.sh OUT — session 21: two mid-M tile widths, 128x144x64 and 128x112x64 cooperative c2x1
# (gemm_config.h; cuBLAS's kernels on 42 of the tuning half's 165 swept shapes with M = 128..2048 are 112- / 144-wide,
# scripts/corpus/tile_widths.py), measured before their rates are fitted. Not run in session 21 (no GPU was lent): the first call
# of the next session with a device. Then, on this machine: fit_heuristic.py OUT/gemm_sweep_tune_m128_2048_every3_*.gz
# --admit 15,16 --grid rates (and the M >= 4096 sweep with --grid rates-large), apply_fit.py, held_back() emptied for
# what the fit takes, and scripts/device/session21_b.sh judges it on the test half.
# 1. Build the tree with the tests (carry the CUTLASS wheel and .devdeps).
# 2. The GEMM core's GPU tests: every kernel against the fp64 reference (the new configs at M = 1, 7, 127, 1000,
#    3000, both dtypes and layouts, bias), the wait / publish / order / graph loops.
# 3. Sweeps of the corpus's tuning half, bf16 (every config x raster x swizzle and split-K factor; --sweep-iters 10):
#    M = 128..2048 every 3rd row (kRelativeRateMid of the new configs), then M = 4096..8192 every 10th row
#    (kRelativeRate). A limit's cut keeps the rows measured so far.
source scripts/device/build_tree.sh "$1"
tag="${TAG:-s21a}"
cat "$out/gpu.txt" >> "$out/checks.log"; rm -f "$out/gpu.txt"
step tests.log 120 flux_gpu_tests --gtest_filter='GemmCoreGpu*:SplitKGpu*:SkinnyGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran|Failure" "$out/tests.log" | head -20
mid="$out/gemm_sweep_tune_m128_2048_every3_${gpu_tag}_${tag}.jsonl"
big="$out/gemm_sweep_tune_m4096_8192_every10_${gpu_tag}_${tag}.jsonl"
left=$(( ${LIMIT:-560} - ($(date +%s) - T0) ))
sweep_part "$mid" $(( left * 2 / 3 )) --corpus-min-m 128 --corpus-max-m 2048 --corpus-every 3
left=$(( ${LIMIT:-560} - ($(date +%s) - T0) ))
sweep_part "$big" $left --corpus-min-m 4096 --corpus-max-m 8192 --corpus-every 10
gzip -9 "$mid" "$big"
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
