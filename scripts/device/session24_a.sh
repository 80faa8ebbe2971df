#!/usr/bin/env bash
# scripts/device/session24_a.sh OUT — session 24's first call, from binaries of main built on the Debian machine
# (carry .devbin: flux-bench, flux-run, flux_gemm_rs_probe, flux_gpu_tests, gzipped; no device build).
# 1. The FP8 GEMM core's GPU tests (Fp8GemmGpu*: the 128x112x128 / 128x144x128 configs of session 23 against the
#    dequantized fp64 reference, first run), then an FP8 sweep of the suite's 18 shapes (every e4m3 config x raster x
#    swizzle beside cuBLASLt FP8): whether the two widths earn a place in the heuristic (issue 13).
# 2. session23_b.sh's judge (the test half every 3rd row, the suite, GEMM+RS's probe jobs), with what is left of
#    LIMIT (default 560 s).
set -uo pipefail
source scripts/device/prebuilt.sh "$1"
tag="${TAG:-s24a}"
cat "$out/gpu.txt" >> "$out/fp8.log"
step fp8.log 60 flux_gpu_tests --gtest_filter='Fp8GemmGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" "$out/fp8.log" | head -10
step fp8.log 90 flux-bench gemm --dtypes e4m3 --sweep --sweep-iters 10 --iters 20 --warmup 2 \
  --json "$out/gemm_sweep_suite_e4m3_${gpu_tag}_${tag}.jsonl"
# The judge: session23_b.sh unpacks the binaries again (cheap) and keeps its own clock.
LIMIT=$(( ${LIMIT:-560} - ($(date +%s) - T0) )) TAG="$tag" bash scripts/device/session23_b.sh "$out" || status=1
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
