#!/usr/bin/env bash
# scripts/device/session6_skinny_torch.sh OUT — one device call (carry build/_deps/cutlass and .devdeps): the
# C++ tree with tests and flux_torch (pip, into build/py/site) built side by side; the GEMM core / split-K /
# skinny GPU tests (the skinny kernels now run two warps per 16 columns, splitting K) and the fused ops'
# MPS correctness jobs; a decode sweep of the corpus's tune half (every 4th shape with M <= 64, every
# variant + cuBLAS: what the skinny time model is refitted on); flux_torch's ops bench at W = 1 (the op
# against its plan call in one queue) and flux-bench gemm-rs / ag-gemm on the same shapes; flux_torch's
# tests. Steps have their own time limits, in order of priority.
source scripts/device/build_tree.sh "$1" pip
step tests.log 100 flux_gpu_tests --gtest_filter='SkinnyGpu.*:GemmCoreGpu.*:SplitKGpu.*'
step tests.log 90 flux_gpu_tests --gtest_filter='Jobs/Gemm*Gpu.ProbeJob/W*_mps_correctness:Jobs/AgGemmGpu.ProbeJob/W*_mps_correctness'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/tests.log" | tail -6
step sweep.log 190 flux-bench gemm --corpus tune --corpus-every 4 --corpus-max-m 64 --sweep \
  --dtypes bf16 --iters 20 --warmup 2 --sweep-iters 10 --json "$out/sweep_decode.jsonl"
grep -E "median|over" "$out/sweep.log" | tail -4
wait_pip torch.log
shapes="4096x12288x12288,8192x12288x6144,1024x6144x12288"
step torch.log 50 python3 -m flux_torch.bench ops --shapes "$shapes" --json "$out/torch_ops_w1.jsonl"
# flux-bench's --json replaces its file: one file per bench, joined after.
step torch.log 30 flux-run -n 1 -- flux-bench gemm-rs --shapes "$shapes" --json /tmp/flux_bench_rs.jsonl
step torch.log 30 flux-run -n 1 -- flux-bench ag-gemm --shapes "$shapes" --json /tmp/flux_bench_ag.jsonl
cat /tmp/flux_bench_rs.jsonl /tmp/flux_bench_ag.jsonl > "$out/flux_bench_w1.jsonl"
python3 scripts/device/torch_vs_flux_bench.py "$out/torch_ops_w1.jsonl" "$out/flux_bench_w1.jsonl" | tee -a "$out/torch.log"
echo "at $(( $(date +%s) - T0 )) s"
step torch.log 150 python3 -m pytest -q -rs tests/python
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
