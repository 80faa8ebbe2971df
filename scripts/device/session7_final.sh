#!/usr/bin/env bash
# scripts/device/session7_final.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the README's main
# command as a newcomer runs it (builds without tests, runs the bf16 / fp16 suite); the tests built into the same
# tree; the FP8, decide-once and cuBLASLt FP8 GPU tests; flux-bench gemm in e4m3 on the 18 suite shapes
# (per-tensor and per-row / column, bf16 out; per-tensor fp16 out for its error); the corpus test half in e4m3
# (every fourth row). At most 8 files come back.
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
t0=$(date +%s)
./scripts/main.sh --iters 20 > "$out/main.log" 2>&1
echo "main rc=$? in $(( $(date +%s) - t0 )) s"; tail -n 4 "$out/main.log"
cp bench/results/gemm_2*.jsonl "$out/main_gemm.jsonl" 2>/dev/null
FLUX_GTEST_DIR="$PWD/.devdeps/gtest/usr" FLUX_BUILD_TESTS=ON ./scripts/build.sh >> "$out/main.log" 2>&1
echo "test build rc=$? in $(( $(date +%s) - t0 )) s"; grep -E " error|Error" "$out/main.log" | head -5
mkdir -p /tmp/bin
ln -sf "$PWD"/build/tools/flux-bench "$PWD"/build/tools/flux-run "$PWD"/build/tests/flux_gpu_tests /tmp/bin/
source scripts/device/common.sh /tmp/bin "$out"
step tests.log 120 flux_gpu_tests --gtest_filter='Fp8GemmGpu.*:GemmCoreGpu.GivenSelection*:CublasGemmGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/tests.log" | tail -6
step fp8_suite.log 90 flux-bench gemm --dtypes e4m3 --scale per-tensor --iters 20 --json "$out/gemm_fp8_tensor.jsonl"
step fp8_suite.log 90 flux-bench gemm --dtypes e4m3 --scale per-row-col --iters 20 --json "$out/gemm_fp8_rowcol.jsonl"
step fp8_suite.log 90 flux-bench gemm --dtypes e4m3 --scale per-tensor --out-dtype fp16 --iters 20 --json /tmp/fp8_fp16.jsonl
python3 - "$out/gemm_fp8_tensor.jsonl" "$out/gemm_fp8_rowcol.jsonl" /tmp/fp8_fp16.jsonl <<'PY' | tee -a "$out/fp8_suite.log"
import json, sys
for f in sys.argv[1:]:
    r = [json.loads(l) for l in open(f)]
    for impl in ("flux", "cublas"):
        e = [x["max_rel_err"] for x in r if x["impl"] == impl and x.get("max_rel_err") is not None]
        print(f, impl, "max_rel_err", max(e) if e else None, "rows", len(e))
PY
grep -E "over 18|FAIL" "$out/fp8_suite.log" | tail -12
step corpus_fp8.log 200 flux-bench gemm --corpus test --corpus-every 4 --dtypes e4m3 --iters 20 --warmup 3 \
  --json "$out/corpus_fp8_test.jsonl"
grep -E "over|skipped" "$out/corpus_fp8.log" | tail -8
cat "$out/corpus_fp8.log" >> "$out/fp8_suite.log"; rm -f "$out/corpus_fp8.log"
echo "done at $(( $(date +%s) - t0 )) s"
exit $status
