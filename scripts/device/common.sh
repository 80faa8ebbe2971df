# scripts/device/common.sh — sourced by the scripts/device/*_checks.sh scripts (BIN_DIR OUT_DIR in $1 $2).
# Sets bin, out, status and gpu_tag, defines step(), records the GPU's state and finds cuBLASLt when the loader
# does not (binaries built on the Debian build machine link it dynamically).
set -uo pipefail
bin="$1"; out="$2"
mkdir -p "$out"
status=0
step() {  # step LOG TIMEOUT_S command...   (appends to OUT/LOG, prints its tail, remembers a failure)
  local log="$1" limit="$2"; shift 2
  echo "=== $log: $*" | tee -a "$out/$log"
  local t0
  t0=$(date +%s)
  timeout "$limit" "$@" >> "$out/$log" 2>&1
  local rc=$?
  echo "=== $log: rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$out/$log"
  tail -n 14 "$out/$log"
  [ $rc -eq 0 ] || status=1
}
# left: seconds left of the call's budget (LIMIT, default 560) since T0 (the sourcing script's start);
# run_if NEED_S LOG LIMIT_S command...: step, or say it was skipped when NEED_S are not left.
left() { echo $(( ${LIMIT:-560} - ($(date +%s) - T0) )); }
run_if() {
  local need="$1"; shift
  if [ "$(left)" -gt "$need" ]; then step "$@"; else echo "skipped ($(left) s left): ${*:3}" | tee -a "$out/$1"; fi
}
# sweep_part FILE LIMIT ARGS...: a `flux-bench gemm --corpus tune ARGS --sweep` run (bf16, --sweep-iters 10) into
# FILE, logged to checks.log; a limit's cut (rc 124) keeps the rows measured so far and is not a failure.
sweep_part() {
  local file="$1" limit="$2"; shift 2
  local before=$status
  step checks.log "$limit" flux-bench gemm --corpus tune "$@" --dtypes bf16 --sweep --sweep-iters 10 --iters 20 \
    --warmup 2 --json "$file"
  tail -n 20 "$out/checks.log" | grep -q "=== checks.log: rc=124 in" && status=$before
  echo "$(grep -c '"impl": "cublas"' "$file") shapes in $file" | tee -a "$out/checks.log"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/gpu.txt"
cat "$out/gpu.txt"
# gpu_tag: h100 / h200 (else "gpu"), for result file names: a call for one kind may run on the other.
gpu_tag=$(grep -o -m 1 -E "H100|H200" "$out/gpu.txt" | tr 'H' 'h')
gpu_tag="${gpu_tag:-gpu}"
if ! ldd "$bin/flux-bench" | grep -q "libcublasLt.so.13 =>.*/"; then
  lib=$(dirname "$(find / -name 'libcublasLt.so.13*' -not -path '/proc/*' 2>/dev/null | head -n 1)")
  echo "libcublasLt.so.13 from $lib"
  export LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}"
fi
export PATH="$bin:$PATH"
