#!/usr/bin/env bash
# scripts/device/session12_a.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the new
# 128x128x64 cooperative c1x2 config (stream-K on the ping-pong winner's tile). Its GPU tests (stream-K vs fp64,
# repeats, publish, the core's publish test), then the corpus's M >= 128 rows (every 4th, bf16), cuBLAS in every
# run: the tuning half with stream-K off, auto (first-estimate constants) and forced onto the new config
# (FLUX_GEMM_CONFIG=128x128x64_coop_c1x2 FLUX_GEMM_STREAM_K=on: its stream-K time on every row, to fit against
# the off run), then the test half auto vs off with the same, unfitted constants.
source scripts/device/build_tree.sh "$1"
step gpu.log 150 flux_gpu_tests --gtest_filter='StreamKGpu.*:GemmCoreGpu.PublishAfterStoreFlagsAndCounters'
grep -E "PASSED|FAILED" "$out/gpu.log" | head -8
run() {  # run TAG HALF ENV...
  local tag="$1" half="$2"; shift 2
  step bench.log 110 env "$@" /tmp/bin/flux-bench gemm --corpus "$half" --corpus-every 4 --corpus-min-m 128 --dtypes bf16 \
    --iters 20 --warmup 3 --json "$out/gemm_corpus_${half}_m128_every4_${tag}_h200_20261203_s12a.jsonl"
}
run sk_off tune FLUX_GEMM_STREAM_K=off
run sk_auto tune FLUX_GEMM_STREAM_K=auto
run coop128_sk_on tune FLUX_GEMM_STREAM_K=on FLUX_GEMM_CONFIG=128x128x64_coop_c1x2
run sk_auto test FLUX_GEMM_STREAM_K=auto
run sk_off test FLUX_GEMM_STREAM_K=off
rm -f "$out/build.log"  # at most 8 files come back: gpu.txt, gpu.log, bench.log, 5 JSON lines
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
