#!/usr/bin/env bash
# scripts/device/session6_last.sh OUT — one device call (carry build/_deps/cutlass and .devdeps): the C++ tree
# with tests; the GEMM core / split-K / skinny GPU tests; the corpus test half (every third row, bf16 + fp16)
# with the 64-row skinny config no longer a candidate; flux-bench model (the 18 suite shapes at their TP, and
# GEMM+AR on GEMM+RS's shapes).
source scripts/device/build_tree.sh "$1"
step tests.log 60 flux_gpu_tests --gtest_filter='SkinnyGpu.*:GemmCoreGpu.*:SplitKGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/tests.log" | tail -4
step corpus_test.log 150 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/corpus_test.jsonl"
grep -E "over" "$out/corpus_test.log" | tail -5
step model.log 90 flux-bench model --json "$out/model.jsonl"
tail -n 30 "$out/model.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
