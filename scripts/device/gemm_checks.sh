#!/usr/bin/env bash
# scripts/device/gemm_checks.sh BIN_DIR OUT_DIR [bench args...]
# One call on a GPU machine: GPU tests, compute-sanitizer on the small hooked case, then flux-bench gemm
# (pass --sweep to add the config sweep). Logs and JSON lines go to OUT_DIR. Exits non-zero if a step failed.
set -uo pipefail
bin="$1"; out="$2"; shift 2
mkdir -p "$out"
status=0
step() {  # step NAME TIMEOUT_S command...
  local name="$1" limit="$2"; shift 2
  echo "=== $name: $*"
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "=== $name: rc=$rc in $(( $(date +%s) - t0 )) s"
  tail -n 25 "$out/$name.log"
  [ $rc -eq 0 ] || status=1
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$out/gpu.txt"
if ! ldd "$bin/flux-bench" | grep -q "libcublasLt.so.13 =>.*/"; then
  lib=$(dirname "$(find / -name 'libcublasLt.so.13*' -not -path '/proc/*' 2>/dev/null | head -n 1)")
  echo "libcublasLt.so.13 from $lib"; export LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}"
fi
step gpu_tests 300 "$bin/flux_gpu_tests" --gtest_color=no
step memcheck 240 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/flux_gpu_tests" --gtest_filter='GemmCoreGpu.SanitizerSmallCase'
step bench_gemm 420 "$bin/flux-bench" gemm --json "$out/gemm.jsonl" "$@"
exit $status
