#!/usr/bin/env bash
# scripts/device/core_and_ops.sh OUT — one device call from a fresh copy (carry build/_deps/cutlass and
# .devdeps): build with the tests, then scripts/device/split_k_checks.sh (GEMM core + split-K tests,
# sanitizer, tune-half sweep, test-half corpus) and the fused ops' GPU tests (GEMM+RS, AG+GEMM, GEMM+AR:
# the core under them changed). At most 8 files under OUT.
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
t0=$(date +%s)
FLUX_GTEST_DIR="$PWD/.devdeps/gtest/usr" FLUX_BUILD_TESTS=ON ./scripts/build.sh > "$out/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - t0 )) s"; grep -E " error|FAILED" "$out/build.log" | head
mkdir -p /tmp/bin
ln -sf "$PWD"/build/tools/flux-bench "$PWD"/build/tools/flux-run "$PWD"/build/tests/flux_gpu_tests /tmp/bin/
timeout "${CHECKS_S:-330}" ./scripts/device/split_k_checks.sh /tmp/bin "$out"
rc=$?
source scripts/device/common.sh /tmp/bin "$out" > /dev/null
step gemm_tests.log "${OPS_S:-200}" flux_gpu_tests --gtest_filter='*GemmRs*:*AgGemm*:*GemmAr*'
grep -E "^\[  (FAILED|PASSED) " "$out/gemm_tests.log" | tail -8
exit $(( rc | status ))
