#!/usr/bin/env bash
# scripts/device/session24_c.sh OUT — judges session 24's two heuristic changes on the test half, old and new side by
# side on one GPU, from binaries built on the Debian machine (carry .devbin: flux-bench of this tree, flux-bench-old of
# the tree before them, flux_gpu_tests, gzipped):
# 1. The large-M rate table for devices below 4 TB/s of HBM (kRelativeRateLowHbm, fitted on the H100's tuning half):
#    the test half's M > 2048 rows (every 3rd, bf16 and fp16), old then new then old; and the suite (the README's
#    main command's benchmark). On an H200 the table is not taken: the rows must pick alike (a control).
# 2. FP8 128x144x128 admitted (kRelativeRate 2.10 above M = 2048, 2.00 below; fitted on s24a's suite sweep): the FP8
#    test half (every 3rd row, e4m3, never swept), old then new.
set -uo pipefail
source scripts/device/prebuilt.sh "$1"
tag="${TAG:-s24c}"
cat "$out/gpu.txt" >> "$out/judge.log"
step judge.log 30 flux_gpu_tests --gtest_filter='Fp8GemmGpu*'
large="--corpus test --corpus-every 3 --corpus-min-m 2049 --dtypes bf16,fp16 --iters 20 --warmup 3"
step judge.log 60 flux-bench-old gemm $large --json "$out/gemm_corpus_test_every3_m4096_old_${gpu_tag}_${tag}.jsonl"
step judge.log 60 flux-bench gemm $large --json "$out/gemm_corpus_test_every3_m4096_new_${gpu_tag}_${tag}.jsonl"
step judge.log 60 flux-bench-old gemm $large --json "$out/gemm_corpus_test_every3_m4096_old2_${gpu_tag}_${tag}.jsonl"
step main.log 60 flux-bench gemm --iters 20 --json "$out/gemm_main_${gpu_tag}_${tag}.jsonl"
grep -E "median" "$out/main.log" | tail -3
step main.log 40 flux-bench gemm --dtypes e4m3 --iters 20 --json "$out/gemm_main_e4m3_${gpu_tag}_${tag}.jsonl"
grep -E "median" "$out/main.log" | tail -3
fp8="--corpus test --corpus-every 3 --dtypes e4m3 --iters 20 --warmup 3"
for v in old new; do
  b=flux-bench; [ $v = old ] && b=flux-bench-old
  left=$(( ${LIMIT:-540} - ($(date +%s) - T0) )); [ $v = old ] && left=$(( left / 2 ))
  [ $left -gt 20 ] && step judge.log $left $b gemm $fp8 --json "$out/gemm_corpus_test_every3_e4m3_${v}_${gpu_tag}_${tag}.jsonl"
done
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
