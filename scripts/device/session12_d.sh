#!/usr/bin/env bash
# scripts/device/session12_d.sh OUT — the final tree of session 12: kStreamKIterCost = 1.5 (fitted on the tuning half,
# scripts/corpus/fit_stream_k.py). Stream-K and core GPU tests; the test half's M >= 128 rows (every 4th, bf16)
# with FLUX_GEMM_STREAM_K=auto beside =off (a clean check: nothing was fitted on them); the README's main command
# with the default (off) and with auto; the README's test command last.
source scripts/device/build_tree.sh "$1"
step gpu.log 60 flux_gpu_tests --gtest_filter='StreamKGpu.*:GemmCoreGpu.*:SplitKGpu.*'
grep -E "PASSED|FAILED" "$out/gpu.log" | head -8
for sk in auto off; do
  step bench.log 60 env FLUX_GEMM_STREAM_K=$sk /tmp/bin/flux-bench gemm --corpus test --corpus-every 4 --corpus-min-m 128 \
    --dtypes bf16 --iters 20 --warmup 3 --json "$out/gemm_corpus_test_m128_every4_sk_${sk}_h200_20261203_s12d.jsonl"
done
step main.log 60 ./scripts/main.sh --iters 20
step main.log 60 env FLUX_GEMM_STREAM_K=auto ./scripts/main.sh --iters 20
grep -E "median|rc=" "$out/main.log" | tail -8
step test.log 230 ./scripts/test.sh
tail -5 "$out/test.log"
rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
