#!/usr/bin/env bash
# scripts/device/session19_a.sh OUT — first run of the GEMV config (8x32x512_gemv, src/gemm/kernel/gemv_kernel.cuh;
# issue 9's decode rows: at M = 1 the best variant of every compiled config ran 5-25% behind cuBLAS on the tuning
# half's s18c sweep, so no selection could close the gap).
# 1. Build the tree with the tests (carry the CUTLASS wheel and .devdeps); the skinny / GEMM / split-K GPU tests,
#    which run the new config through their loops (fp64 reference, hooks, graph replay, bitwise repeatability).
# 2. Sweeps of the corpus's tuning half, bf16 (every config x raster x swizzle and split-K factor; --sweep-iters 10):
#    decode (M <= 16, every 4th row: the GEMV constants) and M = 128..2048 every 7th row (the M <= 2048 rate table,
#    not refitted since the scheduler's fast step; s18c's every-10 sweep held no M = 512 / 2048 rows). A limit's cut
#    keeps the rows measured so far.
# 3. The test half's decode rows (M <= 8, every 3rd, bf16 and fp16) with the first-estimate constants.
source scripts/device/build_tree.sh "$1"
tag="${TAG:-s19a}"
cat "$out/gpu.txt" >> "$out/checks.log"; rm -f "$out/gpu.txt"
step tests.log 90 flux_gpu_tests --gtest_filter='SkinnyGpu*:GemmCoreGpu*:SplitKGpu*'
grep -E "PASSED|FAILED|Failure" "$out/tests.log" | head -20
dec="$out/gemm_sweep_tune_decode_every4_h200_${tag}.jsonl"
mid="$out/gemm_sweep_tune_m128_2048_every7_h200_${tag}.jsonl"
sweep_part "$dec" 120 --corpus-max-m 16 --corpus-every 4
sweep_part "$mid" 100 --corpus-min-m 128 --corpus-max-m 2048 --corpus-every 7
step bench.log 70 flux-bench gemm --corpus test --corpus-max-m 8 --corpus-every 3 --dtypes bf16,fp16 --iters 20 \
  --warmup 3 --json "$out/gemm_corpus_test_decode_every3_h200_${tag}.jsonl"
grep -E "median" "$out/bench.log" | tail -8
gzip -9 "$dec" "$mid"
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
