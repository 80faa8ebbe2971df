#!/usr/bin/env bash
# scripts/device/session9_c.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the C++ tree with tests;
# the AG+GEMM and FP8 fused-op jobs (the gather kernel now cuts every piece into one row chunk per CTA);
# flux-bench model (the gather's own rate again); compute-sanitizer memcheck / racecheck at W = 2 of GEMM+AR (every
# path, rs_ag among them) and memcheck of AG+GEMM; flux-bench gemm-ar at W = 1 and W = 2 (MPS); then the README's
# main command (./scripts/main.sh) in this build directory.
source scripts/device/build_tree.sh "$1"
step ag.log 200 flux_gpu_tests --gtest_filter='Jobs/AgGemmGpu.*:Jobs/Fp8OpsGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/ag.log" | tail -6
step ag.log 60 flux-bench model --json "$out/model.jsonl"
ar_probe="$PWD/build/tests/flux_gemm_ar_probe"; ag_probe="$PWD/build/tests/flux_ag_gemm_probe"
step sanitizer.log 90 flux-run -n 2 -- compute-sanitizer --tool memcheck --error-exitcode 9 "$ar_probe" small
step sanitizer.log 90 flux-run -n 2 -- compute-sanitizer --tool racecheck --error-exitcode 9 "$ar_probe" small
step sanitizer.log 90 flux-run -n 2 -- compute-sanitizer --tool memcheck --error-exitcode 9 "$ag_probe" small
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|probe (PASSED|FAIL)" "$out/sanitizer.log" | sort | uniq -c
step sanitizer.log 60 flux-run -n 1 -- flux-bench gemm-ar --json "$out/gemm_ar_w1.jsonl"
step sanitizer.log 60 flux-run -n 2 --mps -- flux-bench gemm-ar --dtypes bf16 --json "$out/gemm_ar_w2_mps.jsonl"
t1=$(date +%s)
./scripts/main.sh --iters 20 > "$out/main.log" 2>&1
echo "main rc=$? in $(( $(date +%s) - t1 )) s"; tail -n 5 "$out/main.log"
cp "$(ls -t bench/results/gemm_2*.jsonl | head -1)" "$out/main_gemm.jsonl"
rm -f "$out/build.log"  # at most 8 files come back; the build's errors were printed above
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
