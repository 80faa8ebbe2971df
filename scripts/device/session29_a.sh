#!/usr/bin/env bash
# scripts/device/session29_a.sh OUT — session 29's first call: the README's main command on a GPU from a fresh copy
# of the tree (carry build/_deps/cutlass, the CUTLASS wheel the build would download, and .devdeps, Debian's
# libgtest-dev unpacked: the device has no network), then issue 9 and 13 figures from the binaries it built.
# 1. ./scripts/main.sh --iters 20 (set up, build with the tests, the bf16 / fp16 suite: issue 9's suite bar).
# 2. The FP8 suite (issue 13's bar).
# 3. On an H200 the test half every 3rd row, bf16 and fp16 (issue 9's test-half bar; never fitted on), elsewhere the
#    fused ops' GPU tests (ctest -L gpu -R GemmRs|AgGemm|GemmAr) in the time left; TESTHALF=1 / 0 forces either,
#    none skips both.
# LIMIT (s, default 560): the call's budget; steps that would not fit are skipped and say so. The build stays in
# build/ for session29_b.sh on the same warm machine.
set -uo pipefail
rm -f bench/results/gemm_2026????T*.jsonl
source scripts/device/readme_cmd.sh "$1" main.log 480 ./scripts/main.sh --iters 20
tag="${TAG:-s29a}"
cp bench/results/gemm_2026????T*.jsonl "$out/" 2>/dev/null
cat "$out/gpu.txt" >> "$out/bench.log"
run_if 50 fp8.log 40 flux-bench gemm --dtypes e4m3 --iters 20 --json "$out/gemm_main_e4m3_${gpu_tag}_${tag}.jsonl"
grep -E "median" "$out/fp8.log" | tail -3
l=$(( $(left) - 10 ))
# TESTHALF: 1 the test half, 0 the fused ops' GPU tests (they plan with the rule), auto (default) the test half on an
# H200 (issue 9's bars are the H200's), else the fused ops' tests.
th="${TESTHALF:-auto}"; [ "$th" = auto ] && { [ "$gpu_tag" = h200 ] && th=1 || th=0; }
if [ "$th" = 1 ]; then
  run_if 120 bench.log $l flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
    --json "$out/gemm_corpus_test_every3_${gpu_tag}_${tag}.jsonl"
  grep -E "median" "$out/bench.log" | tail -6
elif [ "$th" = 0 ]; then
  run_if 60 ops.log $l ctest --test-dir build -L gpu -R "GemmRs|AgGemm|GemmAr" -j 1 --output-on-failure
  grep -E "tests passed|tests failed|Failed  |\*\*\*Failed|Timeout" "$out/ops.log" | tail -12
fi
echo "done at $(( $(date +%s) - T0 )) s"
(cd "$out" && tar czf results_${tag}.tgz *.jsonl && rm -f *.jsonl)
exit $status
