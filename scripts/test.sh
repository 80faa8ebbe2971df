#!/usr/bin/env bash
# scripts/test.sh — the test command: set up, build, run every test. Without a GPU the GPU tests
# skip with a message and the CPU tests (and the install test) run and must pass; then flux_torch is
# installed with pip and its tests run (scripts/python_tests.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --tests
FLUX_BUILD_TESTS=ON ./scripts/build.sh
ctest --test-dir "${FLUX_BUILD_DIR:-build}" --output-on-failure
./scripts/python_tests.sh
