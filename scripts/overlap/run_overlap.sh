#!/usr/bin/env bash
# scripts/overlap/run_overlap.sh BIN_DIR OUT_DIR [--quick]
# Issue 6's measurement on a machine with G GPUs (NVLink multicast stays off). For TP in {2, 4, 8} up to G:
#   flux-run -n TP -- flux-bench gemm-rs | ag-gemm   (fused, sequential, decomposed, GEMM alone, NCCL alone)
#   flux-run -n TP -- flux-bench p2p
#   flux-run -n TP -- python3 scripts/overlap/torch_async_tp.py   (torch async-TP, NCCL bus bandwidth)
# then plots the speedup over sequential (plot.py). With one GPU it runs the same end to end at TP = 1 and as
# W = 2 processes on the GPU under MPS (correctness only: no NVLink there, and torch needs a GPU per rank).
# --quick: M in {1024, 4096} and bf16 only. Every JSON file lands in OUT_DIR.
set -uo pipefail
bin="$1"; out="$2"; quick="${3:-}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export PATH="$bin:$PATH"
here="$(cd "$(dirname "$0")" && pwd)"
gpus=$(nvidia-smi -L | grep -c '^GPU ')
ms="1024,2048,4096,8192,16384"; dtypes="bf16,fp16"
[ "$quick" = "--quick" ] && { ms="1024,4096"; dtypes="bf16"; }
rs_shapes=$(echo "$ms" | tr ',' '\n' | sed 's/$/x12288x49152/' | paste -sd,)
ag_shapes=$(echo "$ms" | tr ',' '\n' | sed 's/$/x49152x12288/' | paste -sd,)
status=0
run() { echo "=== $*"; "$@" || status=1; }
if [ "$gpus" -ge 2 ]; then
  for tp in 2 4 8; do
    [ "$tp" -le "$gpus" ] || continue
    run flux-run -n "$tp" --timeout 900 -- flux-bench gemm-rs --shapes "$rs_shapes" --dtypes "$dtypes" --json "$out/gemm_rs_tp$tp.jsonl"
    run flux-run -n "$tp" --timeout 900 -- flux-bench ag-gemm --shapes "$ag_shapes" --dtypes "$dtypes" --json "$out/ag_gemm_tp$tp.jsonl"
    run flux-run -n "$tp" --timeout 300 -- flux-bench p2p --json "$out/p2p_tp$tp.jsonl"
    run flux-run -n "$tp" --timeout 900 -- python3 "$here/torch_async_tp.py" --m "$ms" --dtypes "$dtypes" --json "$out/torch_tp$tp.jsonl"
  done
else
  echo "one GPU: TP = 1, and W = 2 processes on the GPU under MPS (correctness, not NVLink speed)"
  run flux-run -n 1 --timeout 600 -- flux-bench gemm-rs --shapes "$rs_shapes" --dtypes "$dtypes" --json "$out/gemm_rs_tp1.jsonl"
  run flux-run -n 1 --timeout 600 -- flux-bench ag-gemm --shapes "$ag_shapes" --dtypes "$dtypes" --json "$out/ag_gemm_tp1.jsonl"
  run flux-run -n 2 --mps --timeout 600 -- flux-bench gemm-rs --shapes "$rs_shapes" --dtypes "$dtypes" --json "$out/gemm_rs_w2_one_gpu.jsonl"
  run flux-run -n 2 --mps --timeout 600 -- flux-bench ag-gemm --shapes "$ag_shapes" --dtypes "$dtypes" --json "$out/ag_gemm_w2_one_gpu.jsonl"
  run flux-run -n 1 --timeout 600 -- python3 "$here/torch_async_tp.py" --m "$ms" --dtypes "$dtypes" --json "$out/torch_tp1.jsonl"
fi
run python3 "$here/plot.py" "$out/speedup.png" "$out"/gemm_rs_*.jsonl "$out"/ag_gemm_*.jsonl "$out"/torch_*.jsonl
exit $status
