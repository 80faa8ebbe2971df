#!/usr/bin/env bash
# scripts/device/skinny_checks.sh OUT — the skinny decode kernels on the GPU machine, from a fresh copy
# (carry build/_deps/cutlass and .devdeps): build with the tests; the GEMM core, split-K and skinny GPU
# tests; the fused ops' correctness jobs under MPS (their GEMMs may pick a skinny config at small M); a
# decode sweep of the corpus's tune half (every SWEEP_EVERY-th shape with M <= 64, all variants + cuBLAS,
# for fitting the heuristic); and the test half's decode rows (M <= 64) with the heuristic as committed.
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin" FLUX_GTEST_DIR="$PWD/.devdeps/gtest/usr" FLUX_BUILD_TESTS=ON
t0=$(date +%s)
./scripts/build.sh > "$out/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - t0 )) s"; grep -E " error|Error" "$out/build.log" | head -5
mkdir -p /tmp/bin
ln -sf "$PWD"/build/tools/flux-bench "$PWD"/build/tools/flux-run "$PWD"/build/tests/flux_gpu_tests /tmp/bin/
source scripts/device/common.sh /tmp/bin "$out"
step gemm_tests.log 150 flux_gpu_tests --gtest_filter='SkinnyGpu.*:GemmCoreGpu.*:SplitKGpu.*'
step gemm_tests.log 60 flux_gpu_tests --gtest_filter='Jobs/Gemm*Gpu.ProbeJob/W*_mps_correctness:Jobs/AgGemmGpu.ProbeJob/W*_mps_correctness'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/gemm_tests.log" | tail -12
step sweep.log 200 flux-bench gemm --corpus tune --corpus-every "${SWEEP_EVERY:-4}" --corpus-max-m 64 --sweep \
  --dtypes bf16 --iters 20 --warmup 2 --sweep-iters 10 --json "$out/sweep_decode.jsonl"
step test_decode.log 120 flux-bench gemm --corpus test --corpus-every 3 --corpus-max-m 64 --dtypes bf16,fp16 \
  --iters 20 --warmup 3 --json "$out/test_decode.jsonl"
# Kernel durations without the event brackets (ncu, clocks left alone), the forced skinny config vs cuBLAS.
if command -v ncu > /dev/null; then
  FLUX_GEMM_CONFIG=16x64x128_skinny_mma timeout 90 ncu --clock-control none \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size \
    --print-summary per-kernel flux-bench gemm --shapes 4x3584x448,1x36864x12288 --dtypes bf16 --iters 20 --warmup 1 \
    --no-check > "$out/ncu.log" 2>&1
  echo "ncu rc=$?"; grep -E "skinny|nvjet|gemm|split_k|Duration|duration|throughput|grid" "$out/ncu.log" | cut -c1-160 | head -40
fi
exit $status
