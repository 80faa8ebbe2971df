#!/usr/bin/env bash
# scripts/device/session7_fp8_sweep.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the C++ tree
# without tests (the benchmark only); flux-bench gemm --sweep in e4m3 on three suite shapes (every FP8 config x
# raster x swizzle against cuBLASLt FP8); the 18 suite shapes with the FP8 promotion interval at 4, 8 and 16
# (speed and the error against the fp64 reference, side by side with cuBLASLt).
source scripts/device/build_tree.sh "$1" notests
step sweep.log 150 flux-bench gemm --dtypes e4m3 --sweep --sweep-iters 20 --iters 20 \
  --shapes 1024x12288x12288,4096x24576x12288,8192x6144x12288 --json "$out/fp8_sweep.jsonl"
python3 - "$out/fp8_sweep.jsonl" <<'PY' | tee -a "$out/sweep.log"
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
best = collections.defaultdict(list)
for r in rows:
    if r["impl"] == "flux_sweep":
        best[(r["m"], r["n"], r["k"])].append((r["vs_cublas"], r["config"], r["raster"], r["swizzle"]))
for shape, v in best.items():
    v.sort(reverse=True)
    print(shape, v[:4])
PY
for p in 4 8 16; do
  FLUX_GEMM_FP8_PROMOTION=$p step promo.log 90 flux-bench gemm --dtypes e4m3 --iters 20 --json "$out/fp8_promo_$p.jsonl"
  grep -E "over 18" "$out/promo.log" | tail -3
  python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print('promotion $p max_rel_err flux', max(x['max_rel_err'] for x in r if x['impl']=='flux'), 'cublas', max(x['max_rel_err'] for x in r if x['impl']=='cublas'))" "$out/fp8_promo_$p.jsonl" | tee -a "$out/promo.log"
done
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
