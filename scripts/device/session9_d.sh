#!/usr/bin/env bash
# scripts/device/session9_d.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the C++ tree with tests;
# the AG+GEMM and FP8 fused-op jobs with the gather kernel cutting only short shards' pieces into row chunks
# (ceil(CTAs / blocks) per piece when a shard has fewer M-blocks than the gather has CTAs); compute-sanitizer
# memcheck and racecheck of AG+GEMM at W = 2; flux-bench model (the gather's own rate).
source scripts/device/build_tree.sh "$1"
step ag.log 200 flux_gpu_tests --gtest_filter='Jobs/AgGemmGpu.*:Jobs/Fp8OpsGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/ag.log" | tail -6
ag_probe="$PWD/build/tests/flux_ag_gemm_probe"
step sanitizer.log 90 flux-run -n 2 -- compute-sanitizer --tool memcheck --error-exitcode 9 "$ag_probe" small
step sanitizer.log 90 flux-run -n 2 -- compute-sanitizer --tool racecheck --error-exitcode 9 "$ag_probe" small
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|probe (PASSED|FAIL)" "$out/sanitizer.log" | sort | uniq -c
step model.log 60 flux-bench model --json "$out/model.jsonl"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
