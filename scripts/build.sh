#!/usr/bin/env bash
# scripts/build.sh — configure and build into ${FLUX_BUILD_DIR:-build} (Release, Ninja, all cores).
# Extra CMake arguments: FLUX_CMAKE_ARGS (e.g. "-DFLUX_CUTLASS_DIR=/path/to/cutlass"); FLUX_BUILD_TESTS
# (ON / OFF; unset: as configured before, ON for a new build directory).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${FLUX_BUILD_DIR:-build}"
export PATH="$PATH:/usr/local/cuda/bin"
# shellcheck disable=SC2086
tests_arg=()
[ -n "${FLUX_BUILD_TESTS:-}" ] && tests_arg=("-DFLUX_BUILD_TESTS=$FLUX_BUILD_TESTS")
[ -n "${FLUX_GTEST_DIR:-}" ] && tests_arg+=("-DFLUX_GTEST_DIR=$FLUX_GTEST_DIR")
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${tests_arg[@]}" ${FLUX_CMAKE_ARGS:-}
cmake --build "$build" -j "$(nproc)"
