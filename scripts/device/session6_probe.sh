#!/usr/bin/env bash
# scripts/device/session6_probe.sh OUT — on a fresh copy (carry build/_deps/cutlass and .devdeps): the README's
# main command as a newcomer runs it (no FLUX_GTEST_DIR: builds without tests), then the tests built into the
# same tree, the GEMM core / split-K / skinny GPU tests and the fused ops' MPS correctness jobs, and ncu's full
# set on the skinny decode kernel at two decode shapes (the ~10 us floor; DRAM bandwidth) beside cuBLAS's kernel.
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
t0=$(date +%s)
./scripts/main.sh --iters 20 > "$out/main.log" 2>&1
echo "main rc=$? in $(( $(date +%s) - t0 )) s"; tail -n 6 "$out/main.log"
cp bench/results/gemm_*.jsonl "$out/" 2>/dev/null
t0=$(date +%s)
FLUX_GTEST_DIR="$PWD/.devdeps/gtest/usr" FLUX_BUILD_TESTS=ON ./scripts/build.sh > "$out/build_tests.log" 2>&1
echo "test build rc=$? in $(( $(date +%s) - t0 )) s"; grep -E " error|Error" "$out/build_tests.log" | head -5
mkdir -p /tmp/bin
ln -sf "$PWD"/build/tools/flux-bench "$PWD"/build/tools/flux-run "$PWD"/build/tests/flux_gpu_tests /tmp/bin/
source scripts/device/common.sh /tmp/bin "$out"
step tests.log 150 flux_gpu_tests --gtest_filter='SkinnyGpu.*:GemmCoreGpu.*:SplitKGpu.*'
step tests.log 90 flux_gpu_tests --gtest_filter='Jobs/Gemm*Gpu.ProbeJob/W*_mps_correctness:Jobs/AgGemmGpu.ProbeJob/W*_mps_correctness'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/tests.log" | tail -12
if command -v ncu > /dev/null; then
  for shape in 8x7168x512 1x36864x12288; do
    FLUX_GEMM_CONFIG=16x64x128_skinny_mma timeout 120 ncu --clock-control none --set full -k regex:skinny \
      --launch-skip 3 --launch-count 1 flux-bench gemm --shapes $shape --dtypes bf16 --iters 8 --warmup 1 \
      --no-check > "$out/ncu_skinny_$shape.log" 2>&1
    echo "ncu skinny $shape rc=$?"
    FLUX_GEMM_CONFIG=16x64x128_skinny_mma timeout 90 ncu --clock-control none --section SpeedOfLight \
      --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis -k regex:'nvjet|gemv|gemmSN|xmma' \
      --launch-skip 3 --launch-count 1 flux-bench gemm --shapes $shape --dtypes bf16 --iters 8 --warmup 1 --no-check \
      > "$out/ncu_cublas_$shape.log" 2>&1 || echo "ncu cublas $shape rc=$?"
  done
  grep -hE "skinny|nvjet|Duration|DRAM Throughput|Memory Throughput|Registers|Achieved Occupancy|Grid Size" \
    "$out"/ncu_*.log | cut -c1-150 | head -60
fi
exit $status
