#!/usr/bin/env bash
# scripts/device/session15_c.sh OUT — the README's test command, `./scripts/test.sh`, in one device call (carry the
# CUTLASS wheel and .devdeps; FLUX_GTEST_DIR points at the unpacked libgtest-dev, nothing can be installed there):
# it builds the tree, runs every ctest test (the GEMM core, split-K / stream-K / skinny, FP8, the runtime, every
# fused-op job at W = 1..8 on the one GPU, the install test) and the flux_torch tests. Then, in what is left of the
# call, the test half's every-3rd rows (bf16 and fp16, cuBLAS in the same run) on the tree it built.
# (The run of 247196a had session14_b.sh's steps written out here; they are the same.)
set -uo pipefail
out="$1"
T0=$(date +%s)
TEST_SH_LIMIT=560 bash scripts/device/session14_b.sh "$out"
rc=$?
left=$(( 590 - ($(date +%s) - T0) ))
if [ $left -gt 95 ] && [ -x build/tools/flux-bench ]; then
  source scripts/device/common.sh "$PWD/build/tools" "$out"
  rm -f "$out/gpu.txt"
  step bench.log $(( left - 5 )) flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
    --json "$out/gemm_corpus_test_every3_h200_s15c.jsonl"
  grep -E "median" "$out/bench.log" | tail -6
fi
echo "done at $(( $(date +%s) - T0 )) s"
exit $rc
