#!/usr/bin/env bash
# scripts/setup.sh — install what the build needs on a fresh Debian/Ubuntu machine (idempotent).
# Needs: the CUDA 13 toolkit already installed (nvcc on PATH or in /usr/local/cuda); installs cmake,
# ninja, GoogleTest (Debian's libgtest-dev) and pip (to fetch the CUTLASS headers wheel) when missing.
set -euo pipefail

need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v ninja >/dev/null 2>&1 || need+=(ninja-build)
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
[ -f /usr/include/gtest/gtest.h ] || [ -n "${FLUX_GTEST_DIR:-}" ] || need+=(libgtest-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "setup: nvcc is not on PATH; add /usr/local/cuda/bin (the build finds it there anyway)"
  else
    echo "setup: the CUDA 13 toolkit (nvcc) is not installed; install it first (it is not a Debian package)" >&2
    exit 1
  fi
fi
echo "setup: ok"
