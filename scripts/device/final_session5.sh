#!/usr/bin/env bash
# scripts/device/final_session5.sh OUT — one device call (carry build/_deps/cutlass and .devdeps): the C++
# tree with tests and flux_torch (pip, into build/py/site) built side by side; the GEMM core / split-K /
# skinny GPU tests and the fused ops' MPS correctness jobs; the corpus test half (every third row, bf16 +
# fp16: issue 9's figure); flux_torch's ops bench at W = 1 on torch's stream and a side stream and
# flux-bench gemm-rs / ag-gemm at W = 1 on the same shapes, compared (issue 11's 3% bar). Steps have
# their own time limits, in order of priority.
source scripts/device/build_tree.sh "$1" pip
step gemm_tests.log 100 flux_gpu_tests --gtest_filter='SkinnyGpu.*:GemmCoreGpu.*:SplitKGpu.*'
step gemm_tests.log 60 flux_gpu_tests --gtest_filter='Jobs/Gemm*Gpu.ProbeJob/W*_mps_correctness:Jobs/AgGemmGpu.ProbeJob/W*_mps_correctness'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/gemm_tests.log" | tail -6
step corpus_test.log 170 flux-bench gemm --corpus test --corpus-every 3 --dtypes bf16,fp16 --iters 20 --warmup 3 \
  --json "$out/corpus_test.jsonl"
wait_pip torch_ops.log
shapes="4096x12288x12288,8192x12288x6144,1024x6144x12288"
step torch_ops.log 40 python3 -m flux_torch.bench ops --shapes "$shapes" --json "$out/torch_ops_w1.jsonl"
step torch_ops.log 40 python3 -m flux_torch.bench ops --stream side --shapes "$shapes" --json "$out/torch_ops_w1.jsonl"
# flux-bench's --json replaces its file: one file per bench, joined after.
step torch_ops.log 30 flux-run -n 1 -- flux-bench gemm-rs --shapes "$shapes" --json /tmp/flux_bench_rs.jsonl
step torch_ops.log 30 flux-run -n 1 -- flux-bench ag-gemm --shapes "$shapes" --json /tmp/flux_bench_ag.jsonl
cat /tmp/flux_bench_rs.jsonl /tmp/flux_bench_ag.jsonl > "$out/flux_bench_w1.jsonl"
python3 scripts/device/torch_vs_flux_bench.py "$out/torch_ops_w1.jsonl" "$out/flux_bench_w1.jsonl" | tee -a "$out/torch_ops.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
