#!/usr/bin/env bash
# scripts/device/session10_b.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the C++ tree with tests;
# every fused-op GPU job with the gather's all-ready-first rule for ranks sharing a GPU (session 10 call A saw
# Jobs/AgGemmGpu.ProbeJob/W4_mps_concurrent_busy time out: the GEMM's waiting CTAs of three ranks plus a foreign
# kernel held every SM that rank 0's barrier needed); the busy jobs 8 more times; AG+GEMM at W = 2 under MPS
# (the fused path's cost of waiting for every shard first); then the README's main command in this directory.
source scripts/device/build_tree.sh "$1"
step ops.log 300 flux_gpu_tests --gtest_filter='Jobs/*:GemmRsGpuFaults.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/ops.log" | tail -8
step busy.log 200 flux_gpu_tests --gtest_filter='Jobs/AgGemmGpu.ProbeJob/W*_mps_concurrent_busy' --gtest_repeat=8
grep -cE "^\[       OK \]" "$out/busy.log"; grep -E "FAILED  \]" "$out/busy.log" | sort | uniq -c
step agw2.log 90 flux-run -n 2 --mps -- flux-bench ag-gemm --shapes 2048x49152x12288,8192x49152x12288 --dtypes bf16 --json "$out/ag_gemm_w2_mps.jsonl"
t1=$(date +%s)
./scripts/main.sh --iters 20 > "$out/main.log" 2>&1
echo "main rc=$? in $(( $(date +%s) - t1 )) s"; tail -n 5 "$out/main.log"
cp "$(ls -t bench/results/gemm_2*.jsonl | head -1)" "$out/main_gemm.jsonl"
rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
