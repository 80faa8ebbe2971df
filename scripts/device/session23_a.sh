#!/usr/bin/env bash
# scripts/device/session23_a.sh OUT — session 23: the 128x144 / 128x112 configs rebuilt with CuTe's extended WGMMA
# shapes (one m64n144k16 / m64n112k16 per k-step instead of nine / seven m64n16k16) and the new 128x176 config,
# measured before their rates are fitted (they are held back until then).
# 1. Build the tree with the tests (carry the CUTLASS wheel and .devdeps).
# 2. The release probe (scripts/device/release_probe.cu): what one publish's instructions cost per tile.
# 3. The GEMM core's GPU tests (the new config's first run: fp64 reference, the wait / publish loops).
# 4. Sweeps of the corpus's tuning half, bf16: M = 128..2048 every 3rd row, then M = 4096..8192 every 10th row.
# Then, here: fit_heuristic.py SWEEP --admit 15,16,17 --grid rates (and --grid rates-large), apply_fit.py, held_back()
# emptied for what the fit takes; the test half judges it (session21_b.sh with a tag).
source scripts/device/build_tree.sh "$1"
tag="${TAG:-s23a}"
cat "$out/gpu.txt" >> "$out/checks.log"; rm -f "$out/gpu.txt"
nvcc -O3 -arch=sm_90a -std=c++17 scripts/device/release_probe.cu -o /tmp/release_probe && \
  step probe.log 60 /tmp/release_probe && step probe.log 60 /tmp/release_probe 132 16 8192
step tests.log 120 flux_gpu_tests --gtest_filter='GemmCoreGpu*:SplitKGpu*:SkinnyGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran|Failure" "$out/tests.log" | head -20
mid="$out/gemm_sweep_tune_m128_2048_every3_${gpu_tag}_${tag}.jsonl"
big="$out/gemm_sweep_tune_m4096_8192_every10_${gpu_tag}_${tag}.jsonl"
left=$(( ${LIMIT:-565} - ($(date +%s) - T0) ))
sweep_part "$mid" $(( left * 2 / 3 )) --corpus-min-m 128 --corpus-max-m 2048 --corpus-every 3
left=$(( ${LIMIT:-565} - ($(date +%s) - T0) ))
sweep_part "$big" $left --corpus-min-m 4096 --corpus-max-m 8192 --corpus-every 10
gzip -9 "$mid" "$big"
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
