#!/usr/bin/env bash
# scripts/device/torch_checks.sh OUT — flux_torch on the GPU machine, from a fresh copy of the tree
# (carry build/_deps/cutlass): build the tools, install flux_torch with pip and run its tests
# (scripts/python_tests.sh: CPU tests + W = 1, 2, 4 on one GPU under MPS), then the W = 1 benches: the
# torch ops vs flux-bench's fused time on the same shapes, and the tp-mlp suite; tp-mlp at W = 2 on one
# GPU (correctness only).
set -uo pipefail
out="$1"
mkdir -p "$out"
status=0
step() {
  local log="$1" limit="$2"; shift 2
  echo "=== $log: $*" | tee -a "$out/$log"
  local t0; t0=$(date +%s)
  timeout "$limit" "$@" >> "$out/$log" 2>&1
  local rc=$?
  echo "=== $log: rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$out/$log"
  tail -n 25 "$out/$log"
  [ $rc -eq 0 ] || status=1
}
nvidia-smi --query-gpu=name,driver_version --format=csv > "$out/gpu.txt"
python3 -c "import torch, setuptools; print('torch', torch.__version__, 'setuptools', setuptools.__version__)" > "$out/env.txt" 2>&1
python3 -c "import triton; print('triton', triton.__version__)" >> "$out/env.txt" 2>&1
python3 -c "import wheel; print('wheel', wheel.__version__)" >> "$out/env.txt" 2>&1
cat "$out/env.txt"
shapes="${SHAPES:-4096x12288x12288,8192x12288x6144,1024x6144x12288}"
step build.log 300 env FLUX_BUILD_TESTS=OFF ./scripts/build.sh
step python_tests.log 480 ./scripts/python_tests.sh -v
tail -c 60000 "$out/python_tests.log" > "$out/python_tests_tail.log"
site="$PWD/build/py/site"
export PYTHONPATH="$site"
step bench_ops.log 200 bash -c "build/tools/flux-run -n 1 -- build/tools/flux-bench gemm-rs --shapes $shapes --json $out/gemm_rs_w1.jsonl && build/tools/flux-run -n 1 -- build/tools/flux-bench ag-gemm --shapes $shapes --json $out/ag_gemm_w1.jsonl && python3 -m flux_torch.bench ops --shapes $shapes --json $out/torch_ops_w1.jsonl"
step bench_tp_mlp.log 200 python3 -m flux_torch.bench tp-mlp --json "$out/tp_mlp_w1.jsonl"
step bench_tp_mlp_w2.log 120 build/tools/flux-run -n 2 --mps -- python3 -m flux_torch.bench tp-mlp --m 1024 --json "$out/tp_mlp_w2_mps.jsonl"
exit $status
