#!/usr/bin/env bash
# scripts/device/session29_b.sh OUT — session 29's second call, on the machine session29_a.sh left warm (its build/
# is reused: carry .devdeps only; carrying build/_deps/cutlass again replaces the unpacked headers and rebuilds all).
# 1. The README's test command: ./scripts/test.sh (ctest: CPU and GPU tests; flux_torch built with pip and its
#    tests).
# 2. Issue 13 on the H200 with the lagged kernels: the FP8 test half every 3rd row at M <= 64, then at M >= 128.
# 3. Issue 9's bf16 / fp16 test half every 3rd row when SKIP_BF16 is not 1 (session29_a.sh runs it when its
#    build leaves the time).
set -uo pipefail
source scripts/device/readme_cmd.sh "$1" test.log "${TEST_LIMIT:-400}" ./scripts/test.sh
tag="${TAG:-s29b}"
cat "$out/gpu.txt" >> "$out/fp8.log"
if [ "${SKIP_BF16:-1}" != 1 ]; then
  run_if 170 bench.log 160 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
    --json "$out/gemm_corpus_test_every3_${gpu_tag}_${tag}.jsonl"
fi
run_if 70 fp8.log 60 flux-bench gemm --corpus test --corpus-every 3 --corpus-max-m 64 --dtypes e4m3 --iters 20 \
  --warmup 3 --json "$out/gemm_corpus_test_every3_e4m3_m64_${gpu_tag}_${tag}.jsonl"
l=$(( $(left) - 10 ))
run_if 70 fp8.log $l flux-bench gemm --corpus test --corpus-every 3 --corpus-min-m 128 --dtypes e4m3 --iters 20 \
  --warmup 3 --json "$out/gemm_corpus_test_every3_e4m3_m128_${gpu_tag}_${tag}.jsonl"
grep -E "median" "$out/fp8.log" | tail -6
echo "done at $(( $(date +%s) - T0 )) s"
(cd "$out" && tar czf results_${tag}.tgz *.jsonl && rm -f *.jsonl)
exit $status
