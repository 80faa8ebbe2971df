#!/usr/bin/env bash
# scripts/device/session6_final.sh OUT — one device call (carry build/_deps/cutlass and .devdeps): the C++ tree
# with tests and flux_torch (pip) built side by side; the GEMM core / split-K / skinny GPU tests; the corpus
# test half (every third row, bf16 + fp16: issue 9's figure, with the skinny model refitted on the tune
# half); flux_torch's tests (CPU + W = 1, 2, 4 under MPS).
source scripts/device/build_tree.sh "$1" pip
step tests.log 100 flux_gpu_tests --gtest_filter='SkinnyGpu.*:GemmCoreGpu.*:SplitKGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/tests.log" | tail -4
step corpus_test.log 200 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/corpus_test.jsonl"
grep -E "over" "$out/corpus_test.log" | tail -5
wait_pip torch.log
step torch.log 150 python3 -m pytest -q -rs tests/python
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
