#!/usr/bin/env bash
# scripts/build.sh — configure and build into ${FLUX_BUILD_DIR:-build} (Release, Ninja, all cores).
# Extra CMake arguments: FLUX_CMAKE_ARGS (e.g. "-DFLUX_CUTLASS_DIR=/path/to/cutlass").
set -euo pipefail
cd "$(dirname "$0")/.."
build="${FLUX_BUILD_DIR:-build}"
export PATH="$PATH:/usr/local/cuda/bin"
# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${FLUX_CMAKE_ARGS:-}
cmake --build "$build" -j "$(nproc)"
