#!/usr/bin/env bash
# scripts/device/session11_b.sh OUT — one device call (carry the CUTLASS wheel and .devdeps), after session11_a.sh showed
# stream-K chosen at M = 128 in padded 256-row tiles (slower): with the rule that stream-K needs full unit rows, the
# tune half's and the test half's M >= 128 rows (every 4th; bf16), stream-K auto beside FLUX_GEMM_STREAM_K=off, cuBLAS
# in every run; the stream-K GPU tests again; the README's main command.
source scripts/device/build_tree.sh "$1"
step gpu.log 200 flux_gpu_tests --gtest_filter='StreamKGpu.*:SplitKGpu.*:Fp8GemmGpu.*'
for half in tune test; do
  step sk_auto_$half.log 200 flux-bench gemm --corpus $half --corpus-every 4 --corpus-min-m 128 --dtypes bf16 --iters 20 \
    --warmup 3 --json "$out/gemm_corpus_${half}_m128_every4_sk_auto_h200_20261203_s11b.jsonl"
  step sk_off_$half.log 200 env FLUX_GEMM_STREAM_K=off /tmp/bin/flux-bench gemm --corpus $half --corpus-every 4 \
    --corpus-min-m 128 --dtypes bf16 --iters 20 --warmup 3 --json "$out/gemm_corpus_${half}_m128_every4_sk_off_h200_20261203_s11b.jsonl"
done
step main.log 120 ./scripts/main.sh --iters 20
grep -E "median|rc=" "$out/main.log" | tail -4
rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
