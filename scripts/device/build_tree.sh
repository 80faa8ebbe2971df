# scripts/device/build_tree.sh — sourced by the one-call device scripts (OUT in $1; $2 "pip" to build
# flux_torch too, "notests" for the benchmark alone): builds the C++ tree with the tests (carry the CUTLASS
# wheel and .devdeps), and with "pip" then flux_torch into build/py/site in the background, linked to the
# tree's libflux.so (wait_pip waits for it
# and sets PYTHONPATH); links the binaries into /tmp/bin and sources common.sh (step, status, the GPU's
# state). T0: the start.
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin" FLUX_GTEST_DIR="$PWD/.devdeps/gtest/usr" FLUX_BUILD_TESTS=ON
[ "${2:-}" = "notests" ] && export FLUX_BUILD_TESTS=OFF
T0=$(date +%s)
site="$PWD/build/py/site"
pip_pid=""
wait_pip() {  # wait_pip LOG: the pip build's end into OUT/LOG, then flux_torch importable
  echo "at $(( $(date +%s) - T0 )) s; waiting for pip"
  [ -n "$pip_pid" ] && wait "$pip_pid"; tail -2 /tmp/pip.log | tee -a "$out/$1"
  export PYTHONPATH="$site"
}
./scripts/build.sh > "$out/build.log" 2>&1
echo "build rc=$? at $(( $(date +%s) - T0 )) s"; grep -E " error" "$out/build.log" | head -5
# flux_torch against the C++ tree's libflux.so (its kernels are not compiled again): only the extension.
if [ "${2:-}" = "pip" ]; then
  ( env PIP_BREAK_SYSTEM_PACKAGES=1 FLUX_PY_LIBFLUX_DIR="$PWD/build" python3 -m pip install --no-build-isolation \
      --no-deps --target "$site" . > /tmp/pip.log 2>&1; echo "pip rc=$? at $(( $(date +%s) - T0 )) s" >> /tmp/pip.log ) &
  pip_pid=$!
fi
mkdir -p /tmp/bin
ln -sf "$PWD"/build/tools/flux-bench "$PWD"/build/tools/flux-run /tmp/bin/
[ "$FLUX_BUILD_TESTS" = ON ] && ln -sf "$PWD"/build/tests/flux_gpu_tests "$PWD"/build/tests/flux_gemm_ar_probe /tmp/bin/
source scripts/device/common.sh /tmp/bin "$out"
