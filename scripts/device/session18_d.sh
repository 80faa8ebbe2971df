#!/usr/bin/env bash
# scripts/device/session18_d.sh OUT — the judge of session 18's GEMM core (issue 9): the scheduler's fast per-tile step
# (src/gemm/fast_tile_order.h), 256x128 cooperative's 128 x 64 epilogue subtile, the large-M rate of 128x128
# ping-pong refitted on the tuning half (s18c: 1.04 -> 1.06).
# 1. Build the tree with the tests (carry the CUTLASS wheel and .devdeps).
# 2. The test half every 3rd row, bf16 and fp16, cuBLAS in the same run: the same 826 rows as s17a / s15b.
# 3. The README's main command (./scripts/main.sh --iters 20: the 18 suite shapes) and the FP8 suite (issue 13).
# 4. The GPU tests (ctest -L gpu) in the time left of the call.
source scripts/device/build_tree.sh "$1"
tag="${TAG:-s18d}"
cat "$out/gpu.txt" >> "$out/bench.log"; rm -f "$out/gpu.txt"
rm -f bench/results/gemm_2026????T*.jsonl
step bench.log 150 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_every3_h200_${tag}.jsonl"
grep -E "median" "$out/bench.log" | tail -8
step fp8.log 60 flux-bench gemm --dtypes e4m3 --scale per-tensor --iters 20 --warmup 3 \
  --json "$out/gemm_fp8_suite_h200_${tag}.jsonl"
grep -E "median" "$out/fp8.log" | tail -2
step main.log 150 ./scripts/main.sh --iters 20
cp bench/results/gemm_2026????T*.jsonl "$out/gemm_suite_main_h200_${tag}.jsonl" 2>/dev/null; grep -E "median|rc=" "$out/main.log" | tail -6
left=$(( 575 - ($(date +%s) - T0) ))
step tests.log $left ctest --test-dir build -L gpu -j 1 --output-on-failure
grep -E "tests passed|tests failed|Failed  |\*\*\*Failed|Skipped" "$out/tests.log" | head -20
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
