#!/usr/bin/env bash
# scripts/device/session6_probe.sh OUT — on a fresh copy (carry build/_deps/cutlass and .devdeps): the README's
# main command as a newcomer runs it (no FLUX_GTEST_DIR: builds without tests); the tests built into the same
# tree; the GEMM core / split-K / skinny GPU tests; every fused-op MPS correctness job and the GEMM+AR jobs
# (two-shot included); compute-sanitizer memcheck + racecheck of the small GEMM+AR probe at W = 2;
# flux-bench gemm-ar at W = 1 and W = 2 (MPS); ncu's full set on the skinny decode kernel at two decode
# shapes beside cuBLAS's kernel. At most 8 files come back: logs are grouped.
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
t0=$(date +%s)
./scripts/main.sh --iters 20 > "$out/main.log" 2>&1
echo "main rc=$? in $(( $(date +%s) - t0 )) s"; tail -n 4 "$out/main.log"
cp bench/results/gemm_2*.jsonl "$out/main_gemm.jsonl" 2>/dev/null
t0=$(date +%s)
FLUX_GTEST_DIR="$PWD/.devdeps/gtest/usr" FLUX_BUILD_TESTS=ON ./scripts/build.sh >> "$out/main.log" 2>&1
echo "test build rc=$? in $(( $(date +%s) - t0 )) s"; grep -E " error|Error" "$out/main.log" | head -5
mkdir -p /tmp/bin
ln -sf "$PWD"/build/tools/flux-bench "$PWD"/build/tools/flux-run "$PWD"/build/tests/flux_gpu_tests \
  "$PWD"/build/tests/flux_gemm_ar_probe /tmp/bin/
source scripts/device/common.sh /tmp/bin "$out"
step tests.log 120 flux_gpu_tests --gtest_filter='SkinnyGpu.*:GemmCoreGpu.*:SplitKGpu.*'
step tests.log 240 flux_gpu_tests --gtest_filter='Jobs/GemmRsGpu.ProbeJob/W*_mps_correctness:Jobs/AgGemmGpu.ProbeJob/W*_mps_correctness:Jobs/GemmArGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]|^\[       OK \]" "$out/tests.log" | tail -30
step tests.log 90 flux-run -n 2 -- compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/bin/flux_gemm_ar_probe small
step tests.log 120 flux-run -n 2 -- compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/bin/flux_gemm_ar_probe small
step gemm_ar.log 60 flux-run -n 1 -- flux-bench gemm-ar --json "$out/gemm_ar_w1.jsonl"
step gemm_ar.log 90 flux-run -n 2 --mps -- flux-bench gemm-ar --dtypes bf16 --shapes 1x8192x8192,128x8192x8192,4096x8192x8192 \
  --json "$out/gemm_ar_w2_mps.jsonl"
if command -v ncu > /dev/null; then
  for shape in 8x7168x512 1x36864x12288; do
    FLUX_GEMM_CONFIG=16x64x128_skinny_mma timeout 100 ncu --clock-control none --set full -k regex:skinny \
      --launch-skip 3 --launch-count 1 flux-bench gemm --shapes $shape --dtypes bf16 --iters 20 --warmup 1 \
      --no-check >> "$out/ncu.log" 2>&1
    echo "ncu skinny $shape rc=$?"
    FLUX_GEMM_CONFIG=16x64x128_skinny_mma timeout 80 ncu --clock-control none --section SpeedOfLight \
      --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis -k regex:'nvjet|gemv|gemmSN|xmma' \
      --launch-skip 3 --launch-count 1 flux-bench gemm --shapes $shape --dtypes bf16 --iters 20 --warmup 1 --no-check \
      >> "$out/ncu.log" 2>&1 || echo "ncu cublas $shape rc=$?"
  done
  grep -E "skinny|nvjet|  Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Grid Size" \
    "$out"/ncu.log | cut -c1-150 | head -40
fi
exit $status
