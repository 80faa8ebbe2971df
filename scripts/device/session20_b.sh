#!/usr/bin/env bash
# scripts/device/session20_b.sh OUT — session 20, after a: the L2 prefetch of the weight before the wait (hooked_collectives.cuh), and the swap-AB configs run the extension points (the tile order over
# C's units, walked transposed by the scheduler; the wait on C's M-block; the publish of C's tile), so the plans
# with hooks (flux-bench's flux_hooks, the fused ops' GEMMs) pick them too.
# 1. Build the tree with the tests.
# 2. The GEMM core's GPU tests (PublishedTilesAreCompleteWhenTheFlagIsSeen at 256 tiles: at 512 swap-AB tiles in a hung
#    in the host's enqueue) (the swap-AB orders and hooks, wait / publish / timeout / graph loops with the
#    swap-AB configs added, split-K with hooks on swap-AB, and session 19's never-run SwapAbGraphReplayWithNewInputs).
# 3. The test half every 3rd row, bf16 and fp16 (the same 826 rows as s19e): flux_hooks / flux.
# 4. The fused ops' GPU tests (AG+GEMM, GEMM+RS, GEMM+AR at W = 1..8 on one GPU), whose GEMMs now take swap-AB at
#    decode M, in the time left (LIMIT, 560 s).
source scripts/device/build_tree.sh "$1"
tag="${TAG:-s20b}"
cat "$out/gpu.txt" >> "$out/bench.log"; rm -f "$out/gpu.txt"
step core.log 130 flux_gpu_tests --gtest_filter='GemmCoreGpu*:SplitKGpu*:SkinnyGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/core.log" | head -20
step bench.log 150 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_every3_h200_${tag}.jsonl"
grep -E "median" "$out/bench.log" | tail -8
left=$(( ${LIMIT:-560} - ($(date +%s) - T0) ))
step ops.log $left ctest --test-dir build -L gpu -R "AgGemm|GemmRs|GemmAr|Fp8Ops|TpMlp" -j 1 --output-on-failure
grep -E "tests passed|tests failed|Failed  |\*\*\*Failed|Skipped|Passed" "$out/ops.log" | head -60
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
