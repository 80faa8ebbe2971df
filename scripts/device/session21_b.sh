#!/usr/bin/env bash
# scripts/device/session21_b.sh OUT — the second call of session21_a.sh's plan (not run in session 21: no GPU was
# lent): after the 128x144 / 128x112 configs' rates are fitted on session21_a.sh's tuning-half sweep
# (scripts/corpus/fit_heuristic.py --admit 15,16 --grid rates --emit FIT.json, then apply_fit.py FIT.json, and
# held_back() in gemm_config.cpp emptied where the fit takes them), judge them on the test half.
# 1. Build the tree with the tests.
# 2. The GEMM core's GPU tests.
# 3. The test half every 3rd row, bf16 and fp16 (the 826 rows of s19e / s20a): flux / cuBLAS and flux_hooks / flux.
# 4. The README's main command (./scripts/main.sh --iters 20: the suite).
# 5. The fused ops' GPU tests in the time left (LIMIT, 560 s).
source scripts/device/build_tree.sh "$1"
tag="${TAG:-s21b}"
rm -f bench/results/gemm_2026????T*.jsonl
cat "$out/gpu.txt" >> "$out/bench.log"; rm -f "$out/gpu.txt"
step core.log 120 flux_gpu_tests --gtest_filter='GemmCoreGpu*:SplitKGpu*:SkinnyGpu*'
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/core.log" | head -20
step bench.log 150 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_every3_${gpu_tag}_${tag}.jsonl"
grep -E "median" "$out/bench.log" | tail -8
step main.log 90 ./scripts/main.sh --iters 20
grep -E "median|results|wrote" "$out/main.log" | tail -12
left=$(( ${LIMIT:-560} - ($(date +%s) - T0) ))
step ops.log $left ctest --test-dir build -L gpu -R "AgGemm|GemmRs|GemmAr|Fp8Ops|TpMlp" -j 1 --output-on-failure
grep -E "tests passed|tests failed|Failed  |\*\*\*Failed" "$out/ops.log" | head -20
cp bench/results/gemm_2026????T*.jsonl "$out/" 2>/dev/null
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
