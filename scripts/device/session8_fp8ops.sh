#!/usr/bin/env bash
# scripts/device/session8_fp8ops.sh OUT [bench] — one device call (carry the CUTLASS wheel and .devdeps): the C++ tree
# with tests; the FP8 fused-op jobs (AG+GEMM, GEMM+RS, GEMM+AR in e4m3 at W = 1..8, graph replay, bad inputs); the
# bf16 / fp16 fused-op jobs the FP8 threading touched (W = 2 and 4 correctness, W = 2 graph); with "bench" also
# flux-bench ag-gemm and gemm-rs in e4m3 at W = 1 (fused vs the FP8 core) and W = 2 under MPS, and flux_torch's
# gemm_fp8 GPU test (flux_torch built beside).
if [ "${2:-}" = "bench" ]; then source scripts/device/build_tree.sh "$1" pip; else source scripts/device/build_tree.sh "$1"; fi
if [ "${2:-}" != "bench" ]; then
  step fp8ops.log 330 flux_gpu_tests --gtest_filter='Jobs/Fp8OpsGpu.*'
  grep -E "^\[  (FAILED|PASSED) |FAILED  \]|^\[       OK \]" "$out/fp8ops.log" | tail -14
  grep -E "probe FAIL" "$out/fp8ops.log" | sort | uniq | head -20
  step ops.log 200 flux_gpu_tests --gtest_filter='Jobs/GemmRsGpu.ProbeJob/W2_mps_correctness:Jobs/GemmRsGpu.ProbeJob/W4_mps_correctness:Jobs/AgGemmGpu.ProbeJob/W2_mps_correctness:Jobs/AgGemmGpu.ProbeJob/W4_mps_correctness:Jobs/AgGemmGpu.ProbeJob/W2_mps_graph:Jobs/GemmArGpu.ProbeJob/W2_mps_correctness:Jobs/GemmArGpu.ProbeJob/W2_mps_graph'
  grep -E "^\[  (FAILED|PASSED) |FAILED  \]|^\[       OK \]" "$out/ops.log" | tail -10
else
  ag="1024x6144x12288,4096x12288x12288,8192x6144x12288"
  rs="1024x12288x6144,4096x12288x12288,8192x12288x6144"
  for scale in per-tensor per-row-col; do
    step bench.log 100 flux-run -n 1 -- flux-bench ag-gemm --dtypes e4m3 --scale $scale --shapes $ag --iters 20 \
      --json "$out/ag_fp8_w1_$scale.jsonl"
    step bench.log 100 flux-run -n 1 -- flux-bench gemm-rs --dtypes e4m3 --scale $scale --shapes $rs --iters 20 \
      --json "$out/rs_fp8_w1_$scale.jsonl"
  done
  step bench.log 120 flux-run -n 2 --mps -- flux-bench ag-gemm --dtypes e4m3 --scale per-row-col \
    --shapes 4096x12288x12288,8192x12288x12288 --iters 20 --json "$out/ag_fp8_w2_mps.jsonl"
  step bench.log 120 flux-run -n 2 --mps -- flux-bench gemm-rs --dtypes e4m3 --scale per-row-col \
    --shapes 4096x12288x12288,8192x12288x12288 --iters 20 --json "$out/rs_fp8_w2_mps.jsonl"
  wait_pip torch.log
  step torch.log 120 python3 -m pytest -q -rs tests/python/test_flux_torch_gpu.py -k fp8
fi
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
