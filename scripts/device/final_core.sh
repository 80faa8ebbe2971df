#!/usr/bin/env bash
# scripts/device/final_core.sh OUT — issue 9's figures in one device call (carry build/_deps/cutlass and
# .devdeps): build with the tests; the GEMM core and split-K tests and the GEMM+RS bad-input probe; the
# corpus's test half (every TEST_EVERY-th row, default 3) and tune half (every TUNE_EVERY-th, default 6),
# bf16 and fp16; then the README's main command (./scripts/main.sh --iters 20). At most 8 files under OUT.
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin" FLUX_GTEST_DIR="$PWD/.devdeps/gtest/usr" FLUX_BUILD_TESTS=ON
t0=$(date +%s)
./scripts/build.sh > "$out/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - t0 )) s"
mkdir -p /tmp/bin
ln -sf "$PWD"/build/tools/flux-bench "$PWD"/build/tools/flux-run "$PWD"/build/tests/flux_gpu_tests /tmp/bin/
source scripts/device/common.sh /tmp/bin "$out"
step gemm_tests.log 120 flux_gpu_tests --gtest_filter='GemmCoreGpu.*:SplitKGpu.*:Jobs/GemmRsGpu.ProbeJob/W3_mps_bad'
step corpus.log 230 flux-bench gemm --corpus test --corpus-every "${TEST_EVERY:-3}" --dtypes bf16,fp16 --iters 20 \
  --warmup 3 --json "$out/corpus_test.jsonl"
[ "${TUNE_EVERY:-6}" = 0 ] || step corpus.log 110 flux-bench gemm --corpus tune --corpus-every "${TUNE_EVERY:-6}" --dtypes bf16,fp16 --iters 20 \
  --warmup 3 --json "$out/corpus_tune.jsonl"
step corpus.log 100 ./scripts/main.sh --iters 20
cp "$(ls -t bench/results/gemm_2*.jsonl | head -1)" "$out/main_suite.jsonl" 2>/dev/null
grep "throughput / cublas" "$out/corpus.log"
grep "^main:" "$out/corpus.log"
exit $status
