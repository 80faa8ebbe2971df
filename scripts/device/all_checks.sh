#!/usr/bin/env bash
# scripts/device/all_checks.sh BIN_DIR OUT_DIR [gemm bench args...]
# Everything that needs the GPU, in one call: the GPU tests (GEMM core, cuBLAS baseline, multi-rank
# runtime jobs under flux-run with and without MPS), compute-sanitizer memcheck on the small hooked
# GEMM, flux-bench gemm, and flux-bench p2p between two ranks on the GPU(s) present, time-sliced and
# under MPS. At most 8 files land in OUT_DIR. Exits non-zero if a step failed.
set -uo pipefail
bin="$1"; out="$2"; shift 2
mkdir -p "$out"
status=0
step() {  # step LOG TIMEOUT_S command...
  local log="$1" limit="$2"; shift 2
  echo "=== $log: $*" | tee -a "$out/$log"
  local t0=$(date +%s)
  timeout "$limit" "$@" >> "$out/$log" 2>&1
  local rc=$?
  echo "=== $log: rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$out/$log"
  tail -n 12 "$out/$log"
  [ $rc -eq 0 ] || status=1
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/gpu.txt"
cat "$out/gpu.txt"
if ! ldd "$bin/flux-bench" | grep -q "libcublasLt.so.13 =>.*/"; then
  lib=$(dirname "$(find / -name 'libcublasLt.so.13*' -not -path '/proc/*' 2>/dev/null | head -n 1)")
  echo "libcublasLt.so.13 from $lib"; export LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}"
fi
export PATH="$bin:$PATH"
step gpu_tests.log 420 "$bin/flux_gpu_tests" --gtest_color=no
step memcheck.log 240 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/flux_gpu_tests" --gtest_filter='GemmCoreGpu.SanitizerSmallCase'
step bench_gemm.log 420 "$bin/flux-bench" gemm --json "$out/gemm.jsonl" "$@"
step p2p.log 120 "$bin/flux-run" -n 2 --mps -- "$bin/flux-bench" p2p --json "$out/p2p_mps.jsonl"
step p2p.log 120 "$bin/flux-run" -n 2 -- "$bin/flux-bench" p2p --rounds 50 --json "$out/p2p_timesliced.jsonl"
exit $status
