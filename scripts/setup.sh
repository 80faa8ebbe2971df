#!/usr/bin/env bash
# scripts/setup.sh [--tests] — install what the build needs on a fresh Debian/Ubuntu machine (idempotent).
# Needs: the CUDA 13 toolkit already installed (nvcc on PATH or in /usr/local/cuda); installs cmake,
# ninja and pip (to fetch the CUTLASS headers wheel) when missing, and with --tests also GoogleTest
# (Debian's libgtest-dev) unless FLUX_GTEST_DIR points at an install, and a Python with the pinned torch
# for the flux_torch tests (see below). Without --tests a missing
# GoogleTest is fine: the main job builds without the tests (scripts/main.sh).
set -euo pipefail

tests=0
[ "${1:-}" = "--tests" ] && tests=1
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v ninja >/dev/null 2>&1 || need+=(ninja-build)
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
if [ $tests -eq 1 ] && [ ! -f /usr/include/gtest/gtest.h ] && [ -z "${FLUX_GTEST_DIR:-}" ]; then
  need+=(libgtest-dev)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null; }; then
    echo "setup: could not install ${need[*]} with apt-get (no network?); install them, or for GoogleTest set" \
         "FLUX_GTEST_DIR to an install prefix" >&2
    exit 1
  fi
fi

if ! command -v nvcc >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "setup: nvcc is not on PATH; add /usr/local/cuda/bin (the build finds it there anyway)"
  else
    echo "setup: the CUDA 13 toolkit (nvcc) is not installed; install it first (it is not a Debian package)" >&2
    exit 1
  fi
fi
# flux_torch (tests only): a Python with torch. The first of $FLUX_PYTHON, python3 (if it imports torch),
# .venv/bin/python; else .venv is made with the pinned torch from PyPI (FLUX_TORCH_VERSION, default
# 2.11.0, the version tested) plus pytest. scripts/python_tests.sh uses the same choice.
if [ $tests -eq 1 ] && [ "${FLUX_PYTHON_TESTS:-1}" != "0" ]; then
  if ! py=$(./scripts/flux_python.sh 2>/dev/null); then
    echo "setup: no Python with torch: making .venv with torch==${FLUX_TORCH_VERSION:-2.11.0} (PyPI)"
    python3 -m venv .venv
    if ! .venv/bin/python -m pip install -q --disable-pip-version-check "torch==${FLUX_TORCH_VERSION:-2.11.0}" \
        pytest numpy setuptools wheel; then
      echo "setup: could not install torch into .venv (no network?); set FLUX_PYTHON to a python with torch," \
           "or FLUX_PYTHON_TESTS=0 to skip the flux_torch tests" >&2
      exit 1
    fi
    py=$(./scripts/flux_python.sh)
  fi
  echo "setup: flux_torch tests use $py (torch $("$py" -c 'import torch; print(torch.__version__)'))"
fi
echo "setup: ok"
