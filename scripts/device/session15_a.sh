#!/usr/bin/env bash
# scripts/device/session15_a.sh OUT — one device call (carry the CUTLASS wheel and .devdeps).
# The skinny kernels' in-kernel split-K reduction (the tile's last slice sums the partials: one kernel, not two):
# 1. the GEMM core's GPU tests (SkinnyGpu.InKernelReductionMatchesTheReductionKernelBitwise: the same bits as the
#    reduction kernel);
# 2. a decode --sweep of the tuning half at M <= 16 (where the skinny configs are candidates; every 4th row, so the
#    stride rotates over the 5 M values), fit_heuristic.py --grid skinny over it (latency, fill, the in-kernel
#    reduction's fixed cost: first estimate 1 us), apply_fit.py writes the fit into gemm_config.cpp, rebuild;
# 3. the judge: the test half's every-3rd rows (M = 1, 8, 64, 512, 4096; bf16 and fp16, cuBLAS in the same run), the
#    rows of s13c and of session 14's lost run;
# 4. the README's main command.
# Run twice in session 15: s15a at e25663f (the first in-kernel reduction, slice by slice), s15b at c997b9e (its
# loads batched); TAG names the result files (default s15a). Both ran no faster than the reduction kernel, and the
# in-kernel reduction (and its fit constant sk_reduce_fixed) was taken out again: this script reproduces them only
# on those commits.
# Files back: checks.log, bench.log, fit.json, the sweep (gzip), the two result files, build.log (on a failure).
source scripts/device/build_tree.sh "$1"
tag="${TAG:-s15a}"
cat "$out/gpu.txt" >> "$out/checks.log"; rm -f "$out/gpu.txt"
step checks.log 120 flux_gpu_tests --gtest_filter='SkinnyGpu.*:SplitKGpu.*:GemmCoreGpu.*'
grep -E "PASSED|FAILED" "$out/checks.log" | head -12
sweep="$out/gemm_sweep_tune_decode_m16_every4_h200_${tag}.jsonl"
step checks.log 130 flux-bench gemm --corpus tune --corpus-max-m 16 --corpus-every 4 --dtypes bf16 --sweep --iters 20 \
  --warmup 3 --json "$sweep"
gzip -9 "$sweep"
step checks.log 60 python3 scripts/corpus/fit_heuristic.py "$sweep.gz" --grid skinny --emit "$out/fit.json"
cp src/gemm/gemm_config.cpp /tmp/gemm_config.before.cpp
step checks.log 10 python3 scripts/corpus/apply_fit.py "$out/fit.json"
diff -u /tmp/gemm_config.before.cpp src/gemm/gemm_config.cpp >> "$out/checks.log"
step checks.log 150 ./scripts/build.sh
rm -f bench/results/gemm_2026????T*.jsonl
left=$(( 560 - ($(date +%s) - T0) - 60 ))
[ $left -gt 160 ] && left=160
step bench.log $left flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/gemm_corpus_test_every3_h200_${tag}.jsonl"
grep -E "median" "$out/bench.log" | tail -6
left=$(( 585 - ($(date +%s) - T0) ))
step bench.log $left ./scripts/main.sh --iters 20
cp bench/results/gemm_2026????T*.jsonl "$out/gemm_main_h200_${tag}.jsonl" 2>/dev/null
grep -E "median|rc=" "$out/bench.log" | tail -4
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
