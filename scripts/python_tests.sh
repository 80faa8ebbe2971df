#!/usr/bin/env bash
# scripts/python_tests.sh — install flux_torch with pip from this checkout (into build/py/site, so no
# environment is changed: `pip install --no-build-isolation --target`; FLUX_PY_REINSTALL=0 keeps an
# existing one; linked to the C++ build's libflux.so when scripts/build.sh made one, FLUX_PY_OWN_LIB=1 for
# setup.py's own), then run its tests with pytest:
# tests/python (CPU tests must pass; GPU tests skip with a message without an sm_90 GPU). The Python is
# scripts/flux_python.sh's choice. FLUX_PYTHON_TESTS=0 skips all of it (said, not hidden).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${FLUX_PYTHON_TESTS:-1}" = "0" ]; then
  echo "python tests: SKIPPED (FLUX_PYTHON_TESTS=0)"
  exit 0
fi
py=$(./scripts/flux_python.sh) || { echo "python tests: no Python with torch (run scripts/setup.sh --tests)" >&2; exit 1; }
site="$PWD/build/py/site"
if [ "${FLUX_PY_REINSTALL:-1}" = "0" ] && [ -d "$site/flux_torch" ]; then
  echo "python tests: using the flux_torch already installed in $site (FLUX_PY_REINSTALL=0)"
else
  rm -rf "$site"
  start=$(date +%s)
  # The C++ tree's libflux.so (scripts/build.sh built it: FLUX_BUILD_SHARED_LIB) when there is one, so pip
  # compiles only the extension; FLUX_PY_OWN_LIB=1 makes setup.py build its own (build/py).
  cxx_build="${FLUX_BUILD_DIR:-build}"
  if [ "${FLUX_PY_OWN_LIB:-0}" != "1" ] && grep -qs "FLUX_BUILD_SHARED_LIB:BOOL=ON" "$cxx_build/CMakeCache.txt"; then
    export FLUX_PY_LIBFLUX_DIR="$PWD/$cxx_build"
    [ "${cxx_build#/}" != "$cxx_build" ] && export FLUX_PY_LIBFLUX_DIR="$cxx_build"
    echo "python tests: linking flux_torch to $FLUX_PY_LIBFLUX_DIR/libflux.so (the C++ tree's kernels)"
  fi
  PIP_BREAK_SYSTEM_PACKAGES=1 "$py" -m pip install --disable-pip-version-check --no-build-isolation --no-deps \
    --target "$site" . 2>&1 | tail -n 3
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "python tests: pip install failed" >&2; exit 1; }
  echo "python tests: flux_torch built and installed in $(( $(date +%s) - start )) s"
fi
PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" "$py" -m pytest -q -rs tests/python "$@"
