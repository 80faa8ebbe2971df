#!/usr/bin/env bash
# scripts/device/pack_prebuilt.sh BUILD_DIR [EXTRA_BINARY...] — on the Debian machine: strips the binaries a device
# script runs (flux-bench, flux-run, flux_gpu_tests and the probes it runs as siblings) from BUILD_DIR, plus any extra
# ones (e.g. a flux-bench-old of another tree, named as it should be called), into .devbin/bin.tar.xz, the carry
# that scripts/device/prebuilt.sh unpacks into /tmp/bin. xz keeps the kernels every binary embeds once (its window
# spans binaries; gzip's 32 KB does not): these nine and two more flux-bench builds took 5.9 MB (2026-12-07), where
# gzip took ~9.7 MB per binary, so a whole build fits the 64 MiB carry beside the tree.
set -euo pipefail
build="$1"; shift
stage=$(mktemp -d)
for b in tools/flux-bench tools/flux-run tests/flux_gpu_tests tests/flux_runtime_gpu_probe tests/flux_rdzv_probe \
         tests/flux_gemm_rs_probe tests/flux_ag_gemm_probe tests/flux_gemm_ar_probe tests/flux_fp8_ops_probe; do
  strip -o "$stage/$(basename "$b")" "$build/$b"
done
for b in "$@"; do strip -o "$stage/$(basename "$b")" "$b"; done
mkdir -p .devbin
rm -f .devbin/*.gz .devbin/bin.tar.xz
tar -C "$stage" -cf - . | xz -9 -T2 > .devbin/bin.tar.xz
rm -rf "$stage"
ls -la .devbin
