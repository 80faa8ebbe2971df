#!/usr/bin/env bash
# scripts/device/session23_a.sh OUT — session 23: the 128x144 / 128x112 configs rebuilt with CuTe's extended WGMMA
# shapes (one m64n144k16 / m64n112k16 per k-step instead of nine / seven m64n16k16) and the new 128x176 config,
# measured before their rates were fitted (s23a).
# 1. The release probe (scripts/device/release_probe.cu): what one publish's instructions cost per tile.
# 2. scripts/device/session21_a.sh: build, the GEMM core's GPU tests, the tuning-half sweeps (bf16, M = 128..2048
#    every 3rd row, then M = 4096..8192 every 10th row), named with TAG (default s23a).
# Then, here: fit_heuristic.py SWEEP --admit 15,16,17 --grid rates --only rate15,rate16,rate17 (--cv 2 checks it) and
# apply_fit.py; the test half judges it (session23_b.sh). (s23a ran the probe after the build; same steps.)
set -uo pipefail
mkdir -p "$1"
export PATH="$PATH:/usr/local/cuda/bin"
nvcc -O3 -arch=sm_90a -std=c++17 scripts/device/release_probe.cu -o /tmp/release_probe && \
  { /tmp/release_probe && /tmp/release_probe 132 16 8192; } > "$1/probe.log" 2>&1
tail -n 24 "$1/probe.log"
TAG="${TAG:-s23a}" LIMIT="${LIMIT:-535}" exec bash scripts/device/session21_a.sh "$1"
