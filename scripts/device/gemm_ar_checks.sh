#!/usr/bin/env bash
# scripts/device/gemm_ar_checks.sh OUT — GEMM+AR on the GPU machine, from a fresh copy (carry
# build/_deps/cutlass and .devdeps, the unpacked libgtest-dev): build with the tests, run the GEMM+RS
# tests (the shared core must not have changed them) and the GEMM+AR tests, then flux-bench gemm-ar at
# W = 1 and at W = 2 on one GPU under MPS. At most 8 files under OUT.
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
FLUX_GTEST_DIR="$PWD/.devdeps/gtest/usr" FLUX_BUILD_TESTS=ON ./scripts/build.sh > "$out/build.log" 2>&1
echo "build rc=$?"; tail -2 "$out/build.log"
timeout 420 build/tests/flux_gpu_tests --gtest_filter='*GemmRs*:*GemmAr*' > "$out/gpu_tests.log" 2>&1
echo "gpu tests rc=$?"; grep -E "PASSED|FAILED|SKIPPED" "$out/gpu_tests.log" | tail -20
timeout 60 build/tools/flux-run -n 1 -- build/tools/flux-bench gemm-ar --json "$out/gemm_ar_w1.jsonl" 2>&1 | tail -16
timeout 90 build/tools/flux-run -n 2 --mps -- build/tools/flux-bench gemm-ar --dtypes bf16 --json "$out/gemm_ar_w2_mps.jsonl" 2>&1 | tail -9
