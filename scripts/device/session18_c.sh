#!/usr/bin/env bash
# scripts/device/session18_c.sh OUT — refit the heuristic's rate tables after the scheduler's fast per-tile step
# (src/gemm/fast_tile_order.h; s18b: ping-pong at short K 0.72 -> 0.86 of cuBLAS, cooperative +5-8%): both tables were
# fitted when every tile paid four 64-bit divisions, which cost ping-pong most, so they favour the cooperative
# configs where ping-pong now wins (s18b: 2048 x 8192 x 1024 0.937 against 256x128's 0.871).
# 1. Build the tree without tests (the GEMM GPU tests passed on this code in s18b; the judge runs them again).
# 2. Sweeps of the corpus's tuning half, bf16 (every config x raster x swizzle, split-K factors; --sweep-iters 10):
#    M <= 2048 every 10th row (the M <= kMidMaxM table, decode included), M = 4096..8192 every 10th row (the large-M
#    table); each cut by its time limit keeps the rows measured so far (one line per shape as it finishes).
# 3. fit_heuristic.py --grid rates over the first, --grid rates-large over the second; apply_fit.py writes both
#    into gemm_config.cpp, brought back with the sweeps and the fit logs. The judge (test half) is the next call.
source scripts/device/build_tree.sh "$1" notests
tag="${TAG:-s18c}"
cat "$out/gpu.txt" >> "$out/checks.log"; rm -f "$out/gpu.txt"
mid="$out/gemm_sweep_tune_m1_2048_every10_h200_${tag}.jsonl"
large="$out/gemm_sweep_tune_m4096_8192_every10_h200_${tag}.jsonl"
sweep_part "$mid" 170 --corpus-max-m 2048 --corpus-every 10
sweep_part "$large" 110 --corpus-min-m 4096 --corpus-max-m 8192 --corpus-every 10
step fit.log 90 python3 scripts/corpus/fit_heuristic.py "$mid" --grid rates --emit "$out/fit_mid.json"
step fit.log 60 python3 scripts/corpus/fit_heuristic.py "$large" --grid rates-large --emit "$out/fit_large.json"
cp src/gemm/gemm_config.cpp /tmp/gemm_config.before.cpp
step fit.log 10 python3 scripts/corpus/apply_fit.py "$out/fit_mid.json"
step fit.log 10 python3 scripts/corpus/apply_fit.py "$out/fit_large.json"
diff -u /tmp/gemm_config.before.cpp src/gemm/gemm_config.cpp >> "$out/fit.log"
cp src/gemm/gemm_config.cpp "$out/gemm_config.fitted.cpp"
gzip -9 "$mid" "$large"
[ $status -eq 0 ] && rm -f "$out/build.log"
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
