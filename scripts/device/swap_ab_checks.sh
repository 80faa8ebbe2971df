#!/usr/bin/env bash
# scripts/device/swap_ab_checks.sh OUT — the swap-AB decode config on the GPU machine (carry
# build/_deps/cutlass and .devdeps): build with the tests; the GEMM core and split-K tests (every config
# against fp64, the swap-AB orders and refused hooks); a sweep of the tune half's decode rows (M <= 64,
# every SWEEP_EVERY-th, default 12: swap-AB next to every other variant, for the next fit); two fused-op
# jobs at W = 2 (their GEMMs must not pick swap-AB). At most 8 files under OUT.
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin" FLUX_GTEST_DIR="$PWD/.devdeps/gtest/usr" FLUX_BUILD_TESTS=ON
t0=$(date +%s)
./scripts/build.sh > "$out/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - t0 )) s"; grep -E " error" "$out/build.log" | head -5
mkdir -p /tmp/bin
ln -sf "$PWD"/build/tools/flux-bench "$PWD"/build/tools/flux-run "$PWD"/build/tests/flux_gpu_tests /tmp/bin/
source scripts/device/common.sh /tmp/bin "$out"
step gemm_tests.log 60 flux_gpu_tests --gtest_filter='GemmCoreGpu.*:SplitKGpu.*'
step sweep.log 60 flux-bench gemm --corpus tune --corpus-every "${SWEEP_EVERY:-12}" --corpus-max-m 64 --sweep \
  --dtypes bf16 --iters 20 --warmup 2 --sweep-iters 10 --json "$out/sweep_decode.jsonl"
step gemm_tests.log 40 flux_gpu_tests --gtest_filter='Jobs/Gemm*Gpu.ProbeJob/W*_mps_correctness:Jobs/AgGemmGpu.ProbeJob/W*_mps_correctness'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/gemm_tests.log" | tail -6
exit $status
