#!/usr/bin/env bash
# scripts/device/session7_promotion.sh OUT — one device call (carry the CUTLASS wheel): the C++ tree without
# tests; flux-bench gemm in e4m3 (per-tensor, bf16 and fp16 out) on the 18 suite shapes with the FP8 promotion
# interval at 16, 32 and 64, in one process each, for speed and the error against the fp64 reference.
source scripts/device/build_tree.sh "$1" notests
for p in 16 32 64; do
  for o in bf16 fp16; do
    j="$out/fp8_promo_${p}_$o.jsonl"; [ $o = fp16 ] && j="/tmp/fp8_promo_${p}_$o.jsonl"  # at most 8 files back
    FLUX_GEMM_FP8_PROMOTION=$p step promo.log 60 flux-bench gemm --dtypes e4m3 --out-dtype $o --iters 20 --json "$j"
    python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print('promotion $p out $o: max_rel_err flux', max(x['max_rel_err'] for x in r if x['impl']=='flux'), 'cublas', max(x['max_rel_err'] for x in r if x['impl']=='cublas'))" "$j" | tee -a "$out/promo.log"
    grep -E "^flux       throughput" "$out/promo.log" | tail -1
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
