#!/usr/bin/env bash
# scripts/device/session20_c.sh OUT — session 20, the final code: session20_b.sh's L2 prefetch before the wait is
# taken out again (flux_hooks / cuBLAS 0.919 -> 0.889 on the test half with it), so the kernels are session20_a.sh's.
# 1. Build the tree with the tests.
# 2. The GEMM core's GPU tests.
# 3. The README's main command (./scripts/main.sh --iters 20).
# 4. The fused ops' GPU tests in the time left (LIMIT).
source scripts/device/build_tree.sh "$1"
rm -f bench/results/gemm_2026????T*.jsonl
step core.log 60 flux_gpu_tests --gtest_filter='GemmCoreGpu*:SplitKGpu*:SkinnyGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/core.log" | head -20
step main.log 90 ./scripts/main.sh --iters 20
grep -E "median|results|wrote" "$out/main.log" | tail -12
left=$(( ${LIMIT:-370} - ($(date +%s) - T0) ))
step ops.log $left ctest --test-dir build -L gpu -R "AgGemm|GemmRs|GemmAr|Fp8Ops|TpMlp" -j 1 --output-on-failure
grep -E "tests passed|tests failed|Failed  |\*\*\*Failed" "$out/ops.log" | head -20
cp bench/results/gemm_2026????T*.jsonl "$out/" 2>/dev/null
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
