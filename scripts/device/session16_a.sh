#!/usr/bin/env bash
# scripts/device/session16_a.sh OUT — one device call (carry the CUTLASS wheel): the large-M rate table
# (kRelativeRate, M > kMidMaxM = 2048) fitted on the corpus's tuning half, and judged on the test half.
# That table was fitted in session 3 on the 15 suite shapes (where 128x128 ping-pong won everything) and has
# never seen the corpus; the test half's M = 4096 rows ran at a median 0.931 of cuBLAS (s15b), on 128x128
# ping-pong nearly everywhere.
# 1. Build the tree without tests (the change is constants; the GPU tests run in the next call).
# 2. A --sweep of the tuning half at M = 4096..8192 (every 3rd row, bf16; split-K factors beyond two waves of
#    items are no longer measured: the heuristic never takes them, so at this M there are none).
# 3. fit_heuristic.py --grid rates-large over it (coordinate descent of kRelativeRate only), apply_fit.py writes
#    the fit into gemm_config.cpp (the diff into checks.log), rebuild.
# 4. The judge: the test half's M = 4096 rows, bf16 and fp16, cuBLAS in the same run: the same 81 weights as
#    s15b's M = 4096 rows (gemm_corpus_test_every3_h200_20261204_s15b.jsonl.gz), so pick against pick per row.
# Files back: checks.log, bench.log, fit.json, gemm_config.cpp after the fit, the sweep (gzip), the judge's
# rows, build.log (on a failure).
source scripts/device/build_tree.sh "$1" notests
tag="${TAG:-s16a}"
cat "$out/gpu.txt" >> "$out/checks.log"; rm -f "$out/gpu.txt"
sweep="$out/gemm_sweep_tune_m4096_8192_every3_h200_${tag}.jsonl"
left=$(( 560 - ($(date +%s) - T0) - 200 ))
[ $left -gt 260 ] && left=260
before=$status
step checks.log $left flux-bench gemm --corpus tune --corpus-min-m 2049 --corpus-max-m 8192 --corpus-every 3 \
  --dtypes bf16 --sweep --iters 20 --warmup 3 --json "$sweep"
# Cut by its limit (rc 124): the rows measured so far are the data (each shape's line is written when it is done).
tail -n 20 "$out/checks.log" | grep -q "=== checks.log: rc=124 in" && status=$before
grep -c '"impl": "cublas"' "$sweep" >> "$out/checks.log"
gzip -9 "$sweep"
step checks.log 60 python3 scripts/corpus/fit_heuristic.py "$sweep.gz" --grid rates-large --emit "$out/fit.json"
cp src/gemm/gemm_config.cpp /tmp/gemm_config.before.cpp
step checks.log 10 python3 scripts/corpus/apply_fit.py "$out/fit.json"
diff -u /tmp/gemm_config.before.cpp src/gemm/gemm_config.cpp >> "$out/checks.log"
cp src/gemm/gemm_config.cpp "$out/gemm_config.fitted.cpp"
step checks.log 120 ./scripts/build.sh
rm -f bench/results/gemm_2026????T*.jsonl
left=$(( 590 - ($(date +%s) - T0) ))
step bench.log $left flux-bench gemm --corpus test --corpus-min-m 4096 --corpus-max-m 4096 --dtypes bf16,fp16 \
  --iters 20 --warmup 3 --json "$out/gemm_corpus_test_m4096_h200_${tag}.jsonl"
grep -E "median" "$out/bench.log" | tail -6
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
