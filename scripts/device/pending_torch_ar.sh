#!/usr/bin/env bash
# scripts/device/pending_torch_ar.sh OUT — one device call for what had never run on the GPU at the end of
# session 4: flux_torch's checks (scripts/device/torch_checks.sh: build, tests, W = 1 benches, tp-mlp,
# flux-bench model) and then flux-bench gemm-ar at W = 1 and W = 2 on one GPU under MPS. Files: torch_checks'
# logs and JSON lines in a folder, packed into OUT/results.tgz (the device returns at most 8 files); its
# console output is echoed. Carry build/_deps/cutlass.
set -uo pipefail
out="$1"; work=/tmp/pending; rm -rf "$work"; mkdir -p "$work"
pack() { tar czf "$out/results.tgz" -C "$work" . ; }
trap pack EXIT
timeout 470 ./scripts/device/torch_checks.sh "$work"; echo "torch_checks rc=$?"
timeout 40 build/tools/flux-run -n 1 -- build/tools/flux-bench gemm-ar --json "$work/gemm_ar_w1.jsonl" > "$work/gemm_ar.log" 2>&1
echo "gemm-ar W=1 rc=$?"; tail -16 "$work/gemm_ar.log"
timeout 50 build/tools/flux-run -n 2 --mps -- build/tools/flux-bench gemm-ar --dtypes bf16 --json "$work/gemm_ar_w2_mps.jsonl" >> "$work/gemm_ar.log" 2>&1
echo "gemm-ar W=2 rc=$?"; tail -9 "$work/gemm_ar.log"
