#!/usr/bin/env bash
# scripts/device/session14_b.sh OUT — the README's test command, `./scripts/test.sh`, alone in one device call (carry
# the CUTLASS wheel and .devdeps; FLUX_GTEST_DIR points at the unpacked libgtest-dev, nothing can be installed
# there): it builds the tree, runs every ctest test (the whole GPU suite: the GEMM core, split-K / stream-K /
# skinny, FP8, the runtime, every fused-op job at W = 1..8 on the one GPU) and the flux_torch tests. Session 12's
# run of it was cut at 230 s; a full run has not been recorded since 2026-12-01 (120 tests then, 224 now).
# Written in session 14 (no device time) for the next session. TEST_SH_LIMIT: its limit in seconds (default 570);
# scripts/device/session15_c.sh runs it with 560.
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin" FLUX_GTEST_DIR="$PWD/.devdeps/gtest/usr"
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/test_sh.log"
timeout "${TEST_SH_LIMIT:-570}" ./scripts/test.sh >> "$out/test_sh.log" 2>&1
rc=$?
echo "=== ./scripts/test.sh: rc=$rc in $(( $(date +%s) - T0 )) s" | tee -a "$out/test_sh.log"
grep -E "tests passed|tests failed|Failed|passed|skipped|FAILED" "$out/test_sh.log" | tail -12
exit $rc
