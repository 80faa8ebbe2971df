#!/usr/bin/env bash
# scripts/device/torch_checks.sh OUT — flux_torch on the GPU machine, from a fresh copy of the tree
# (carry build/_deps/cutlass). One call: build the tools (flux-run, flux-bench) and install flux_torch
# with pip at the same time; a one-GEMM smoke test (on a crash: a native backtrace and the link facts,
# then stop); the flux_torch tests (scripts/python_tests.sh: CPU tests + W = 1, 2, 4 on one GPU under
# MPS); the W = 1 benches (the torch ops vs flux-bench's fused time on the same shapes; tp-mlp) and
# tp-mlp at W = 2 on one GPU (correctness only); flux-bench model. At most 8 files under OUT.
set -uo pipefail
out="$1"; mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin" TORCHINDUCTOR_COMPILE_THREADS=1
status=0
step() {
  local log="$1" limit="$2"; shift 2
  echo "=== $*" >> "$out/$log"; echo "=== $log: $*"
  local t0; t0=$(date +%s)
  timeout "$limit" "$@" >> "$out/$log" 2>&1
  local rc=$?
  echo "=== rc=$rc in $(( $(date +%s) - t0 )) s" >> "$out/$log"; echo "=== $log: rc=$rc in $(( $(date +%s) - t0 )) s"
  [ $rc -eq 0 ] || status=1
  return $rc
}
{ nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, setuptools; print('torch', torch.__version__, 'setuptools', setuptools.__version__)"
  python3 -c "import triton; print('triton', triton.__version__)"; g++ --version | head -1; } > "$out/build.log" 2>&1
cat "$out/build.log"
site="$PWD/build/py/site"
( env FLUX_BUILD_TESTS=OFF ./scripts/build.sh > /tmp/tools_build.log 2>&1; echo "tools build rc=$?" >> /tmp/tools_build.log ) &
step build.log 400 env PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-build-isolation --no-deps --target "$site" .
wait
tail -3 /tmp/tools_build.log | tee -a "$out/build.log"
export PYTHONPATH="$site"
rm -f /tmp/diagstore
if ! step build.log 60 python3 scripts/device/diag_torch.py; then
  gcc -shared -fPIC -o /tmp/segv.so scripts/device/segv_backtrace.c
  rm -f /tmp/diagstore
  LD_PRELOAD=/tmp/segv.so python3 scripts/device/diag_torch.py 2>&1 | c++filt | tail -30 | cut -c1-300
  nm -D --defined-only "$site/flux_torch/libflux.so" | c++filt | grep -v "flux::" | head -10
  nm -D --defined-only "$site"/flux_torch/_C*.so | c++filt | head -10
  g++ -v 2>&1 | tail -3; python3 -c "import sysconfig; print(sysconfig.get_config_var('LDSHARED'))"
  grep -A2 "^build libflux.so.0.1.0" build/py/build.ninja | cut -c1-200 | tail -2
  grep "LINK_FLAGS\|LINK_LIBRARIES" build/py/build.ninja | head -4 | cut -c1-400
  exit 1
fi
tail -4 "$out/build.log"
step python_tests.log 250 env FLUX_PY_REINSTALL=0 ./scripts/python_tests.sh -v
tail -n 30 "$out/python_tests.log" | cut -c1-400
shapes="${SHAPES:-4096x12288x12288,8192x12288x6144,1024x6144x12288}"
step bench.log 45 build/tools/flux-run -n 1 -- build/tools/flux-bench gemm-rs --shapes "$shapes" --json "$out/flux_bench_w1.jsonl"
step bench.log 45 build/tools/flux-run -n 1 -- build/tools/flux-bench ag-gemm --shapes "$shapes" --json /tmp/ag_gemm_w1.jsonl
cat /tmp/ag_gemm_w1.jsonl >> "$out/flux_bench_w1.jsonl"
step bench.log 60 build/tools/flux-bench gemm --shapes "$shapes" --dtypes bf16,fp16 --json /tmp/gemm_w1.jsonl
cat /tmp/gemm_w1.jsonl >> "$out/flux_bench_w1.jsonl"
step bench.log 60 python3 -m flux_torch.bench ops --shapes "$shapes" --json "$out/torch_ops_w1.jsonl"
step bench.log 60 python3 -m flux_torch.bench ops --stream side --shapes "$shapes" --json "$out/torch_ops_w1.jsonl"
step bench.log 90 python3 -m flux_torch.bench tp-mlp --json "$out/tp_mlp_w1.jsonl"
step bench.log 45 build/tools/flux-run -n 2 --mps -- python3 -m flux_torch.bench tp-mlp --m 1024 --json "$out/tp_mlp_w2_mps.jsonl"
step bench.log 120 build/tools/flux-bench model --json "$out/model.jsonl"
grep -v "^{" "$out/bench.log" | tail -n 30 | cut -c1-300
exit $status
