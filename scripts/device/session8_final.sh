#!/usr/bin/env bash
# scripts/device/session8_final.sh OUT [main] — one device call (carry the CUTLASS wheel and .devdeps). Default: the
# C++ tree with tests and flux_torch beside it; every fused-op GPU job (GEMM+RS, AG+GEMM, GEMM+AR, FP8 ops: all
# modes, W = 1..8), the FP8 core tests, and flux_torch's whole pytest suite (CPU tests, W = 1, 2, 4 on one GPU with
# the FP8 fused ops, gemm_fp8). "main": the README's main command as a newcomer runs it (./scripts/main.sh).
set -uo pipefail
if [ "${2:-}" = "main" ]; then
  out="$1"; mkdir -p "$out"; t0=$(date +%s)
  export PATH="$PATH:/usr/local/cuda/bin"
  ./scripts/main.sh --iters 20 > "$out/main.log" 2>&1
  echo "main rc=$? in $(( $(date +%s) - t0 )) s"; tail -n 6 "$out/main.log"
  cp bench/results/gemm_2*.jsonl "$out/main_gemm.jsonl" 2>/dev/null
  exit 0
fi
source scripts/device/build_tree.sh "$1" pip
step ops.log 330 flux_gpu_tests --gtest_filter='Jobs/*:GemmRsGpuFaults.*:Fp8GemmGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/ops.log" | tail -8
grep -cE "^\[       OK \]" "$out/ops.log"
wait_pip torch.log
step torch.log 200 python3 -m pytest -q -rs tests/python
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
