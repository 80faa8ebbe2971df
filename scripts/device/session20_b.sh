#!/usr/bin/env bash
# scripts/device/session20_b.sh OUT — session 20, after session20_a.sh: the same checks with the L2 prefetch of the
# weight before the wait (hooked_collectives.cuh) added to the swap-AB configs' extension points.
# 1. Build the tree with the tests.
# 2. The GEMM core's GPU tests (in a, PublishedTilesAreCompleteWhenTheFlagIsSeen hung: 512 swap-AB tiles, 1024
#    consumer operations queued before the GEMM, blocked the host's enqueue; now 256 tiles), the rest of them
#    unrun in a: the swap-AB orders and hooks, split-K with hooks on swap-AB, SwapAbGraphReplayWithNewInputs.
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
