#!/usr/bin/env bash
# scripts/device/session9_e.sh OUT — one device call (carry the CUTLASS wheel): the C++ tree without tests; the W = 1
# bars of GEMM+RS and AG+GEMM (flux-bench gemm-rs / ag-gemm at W = 1 on their 9 suite shapes, bf16 and fp16: fused
# against the GEMM core in the same run), after the rule and gather changes of session 9.
source scripts/device/build_tree.sh "$1" notests
step w1.log 60 flux-run -n 1 -- flux-bench gemm-rs --shapes 1024x12288x24576,1024x12288x12288,1024x12288x6144,4096x12288x24576,4096x12288x12288,4096x12288x6144,8192x12288x24576,8192x12288x12288,8192x12288x6144 --json "$out/gemm_rs_w1.jsonl"
step w1.log 60 flux-run -n 1 -- flux-bench ag-gemm --shapes 1024x24576x12288,1024x12288x12288,1024x6144x12288,4096x24576x12288,4096x12288x12288,4096x6144x12288,8192x24576x12288,8192x12288x12288,8192x6144x12288 --json "$out/ag_gemm_w1.jsonl"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
