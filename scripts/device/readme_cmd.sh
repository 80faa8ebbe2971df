# scripts/device/readme_cmd.sh — sourced by the device scripts that run one of the README's two commands on the tree
# as it travelled (carry build/_deps/cutlass, the CUTLASS wheel the build would download, and .devdeps, Debian's
# libgtest-dev unpacked: the device has no network; a warm machine's build/ is reused).
# Usage: source scripts/device/readme_cmd.sh OUT LOG LIMIT_S COMMAND...: runs COMMAND into OUT/LOG (T0: the start),
# links the binaries it built into /tmp/bin and sources common.sh (step, left, run_if, gpu_tag; status: 1 when
# COMMAND failed).
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin" FLUX_GTEST_DIR="$PWD/.devdeps/gtest/usr"
T0=$(date +%s)
readme_log="$2" readme_limit="$3"; shift 3
echo "=== $readme_log: $*" | tee "$out/$readme_log"
timeout "$readme_limit" "$@" >> "$out/$readme_log" 2>&1
readme_rc=$?
echo "=== $readme_log: rc=$readme_rc in $(( $(date +%s) - T0 )) s" | tee -a "$out/$readme_log"
grep -E " error|median|results in|main:|tests passed|tests failed|\*\*\*Failed|Failed  |python tests:| passed" \
  "$out/$readme_log" | tail -14
mkdir -p /tmp/bin
ln -sf "$PWD"/build/tools/flux-bench "$PWD"/build/tools/flux-run "$PWD"/build/tests/flux_gpu_tests /tmp/bin/
source scripts/device/common.sh /tmp/bin "$out"
[ $readme_rc -eq 0 ] || status=1
