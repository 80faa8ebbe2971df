#!/usr/bin/env bash
# scripts/device/torch_bench.sh OUT — flux_torch's W = 1 op bar and the W = 2 tp-mlp check, from a fresh
# copy (carry build/_deps/cutlass): build the tools and flux_torch at once, then flux-bench gemm-rs /
# ag-gemm and `python -m flux_torch.bench ops` on the same shapes, and tp-mlp at W = 2 on one GPU (MPS).
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
site="$PWD/build/py/site"
( env FLUX_BUILD_TESTS=OFF ./scripts/build.sh > "$out/build.log" 2>&1 ) &
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --no-build-isolation --no-deps --target "$site" . >> "$out/pip.log" 2>&1
echo "pip rc=$?"; wait; tail -1 "$out/build.log"
export PYTHONPATH="$site"
shapes="${SHAPES:-4096x12288x12288,8192x12288x6144,1024x6144x12288}"
for op in gemm-rs ag-gemm; do
  timeout 45 build/tools/flux-run -n 1 -- build/tools/flux-bench $op --shapes "$shapes" --json "$out/${op/-/_}_w1.jsonl" 2>&1 | tail -7
done
timeout 60 python3 -m flux_torch.bench ops --shapes "$shapes" --json "$out/torch_ops_w1.jsonl" 2>&1 | grep -v Warning | tail -3 | cut -c1-300
timeout 60 build/tools/flux-run -n 2 --mps -- python3 -m flux_torch.bench tp-mlp --m 1024 --json "$out/tp_mlp_w2_mps.jsonl" 2>&1 | grep -v Warn | tail -6 | cut -c1-400
