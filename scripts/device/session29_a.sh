#!/usr/bin/env bash
# scripts/device/session29_a.sh OUT — session 29's first call: the README's main command on a GPU from a fresh copy
# of the tree (carry build/_deps/cutlass, the CUTLASS wheel the build would download, and .devdeps, Debian's
# libgtest-dev unpacked: the device has no network), then issue 9 and 13 figures from the binaries it built.
# 1. ./scripts/main.sh --iters 20 (set up, build with the tests, the bf16 / fp16 suite: issue 9's suite bar).
# 2. The FP8 suite (issue 13's bar).
# 3. On an H200 the test half every 3rd row, bf16 and fp16 (issue 9's test-half bar; never fitted on), elsewhere the
#    fused ops' GPU tests (ctest -L gpu -R GemmRs|AgGemm|GemmAr) in the time left; TESTHALF=1 / 0 forces either.
# LIMIT (s, default 560): the call's budget; steps that would not fit are skipped and say so. The build stays in
# build/ for session29_b.sh on the same warm machine.
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin" FLUX_GTEST_DIR="$PWD/.devdeps/gtest/usr"
T0=$(date +%s)
tag="${TAG:-s29a}"
rm -f bench/results/gemm_2026????T*.jsonl
echo "=== main.log: ./scripts/main.sh --iters 20" | tee "$out/main.log"
timeout 480 ./scripts/main.sh --iters 20 >> "$out/main.log" 2>&1
rc=$?
echo "=== main.log: rc=$rc in $(( $(date +%s) - T0 )) s" | tee -a "$out/main.log"
grep -E " error|median|results in|FAILED|main:" "$out/main.log" | tail -12
cp bench/results/gemm_2026????T*.jsonl "$out/" 2>/dev/null
mkdir -p /tmp/bin
ln -sf "$PWD"/build/tools/flux-bench "$PWD"/build/tools/flux-run "$PWD"/build/tests/flux_gpu_tests /tmp/bin/
source scripts/device/common.sh /tmp/bin "$out"
[ $rc -eq 0 ] || status=1
left() { echo $(( ${LIMIT:-560} - ($(date +%s) - T0) )); }
run_if() {  # run_if NEED_S LOG LIMIT_S command...: step, or say it was skipped
  local need="$1"; shift
  if [ "$(left)" -gt "$need" ]; then step "$@"; else echo "skipped ($(left) s left): ${*:3}" | tee -a "$out/$1"; fi
}
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
else
  run_if 60 ops.log $l ctest --test-dir build -L gpu -R "GemmRs|AgGemm|GemmAr" -j 1 --output-on-failure
  grep -E "tests passed|tests failed|Failed  |\*\*\*Failed|Timeout" "$out/ops.log" | tail -12
fi
echo "done at $(( $(date +%s) - T0 )) s"
(cd "$out" && tar czf results_${tag}.tgz *.jsonl && rm -f *.jsonl)
exit $status
