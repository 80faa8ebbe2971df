#!/usr/bin/env bash
# scripts/device/split_k_checks.sh BIN OUT — issue 9 on the GPU machine with binaries built on the build
# machine (carry BIN, e.g. .devbin with flux-bench and flux_gpu_tests): the GEMM core's GPU tests with
# split-K (and compute-sanitizer memcheck on the split-K case), the config x split sweep on a sample of
# the corpus's tune half (what the heuristic's constants are fitted on) and the corpus's test half with
# the heuristic. SWEEP_EVERY / TEST_EVERY thin the corpus (defaults 6 / 3). At most 8 files under OUT.
source "$(dirname "$0")/common.sh"
step gemm_tests.log 240 flux_gpu_tests --gtest_filter='GemmCoreGpu.*:SplitKGpu.*'
step gemm_tests.log 180 compute-sanitizer --tool memcheck --error-exitcode 9 flux_gpu_tests \
  --gtest_filter='SplitKGpu.SanitizerSmallCase:GemmCoreGpu.SanitizerSmallCase'
if [ "${SWEEP_EVERY:-6}" != 0 ]; then
  step sweep.log 260 flux-bench gemm --corpus tune --corpus-every "${SWEEP_EVERY:-6}" --corpus-max-m 2048 --sweep \
    --dtypes bf16 --iters 20 --warmup 2 --sweep-iters 10 --json "$out/sweep_tune.jsonl"
fi
if [ "${TEST_EVERY:-3}" != 0 ]; then
  step corpus.log 300 flux-bench gemm --corpus test --corpus-every "${TEST_EVERY:-3}" --dtypes bf16,fp16 --iters 20 \
    --warmup 3 --json "$out/corpus_test.jsonl"
fi
exit $status
