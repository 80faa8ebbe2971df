#!/usr/bin/env bash
# scripts/device/session9_a.sh OUT — one device call (carry the CUTLASS wheel and .devdeps): the C++ tree with tests;
# the FP8 core tests (with the 128x112x128 config); flux-bench gemm --sweep in e4m3 over the 18 suite shapes (every
# FP8 config x raster x swizzle against cuBLASLt FP8, the new config among them); the GEMM+AR jobs (rs_ag among the
# paths, W = 1..8) and the FP8 fused-op jobs.
source scripts/device/build_tree.sh "$1"
step fp8core.log 200 flux_gpu_tests --gtest_filter='Fp8GemmGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/fp8core.log" | tail -6
step sweep.log 240 flux-bench gemm --dtypes e4m3 --sweep --sweep-iters 20 --iters 20 --json "$out/fp8_sweep.jsonl"
python3 - "$out/fp8_sweep.jsonl" <<'PY' | tee -a "$out/sweep.log"
import json, sys, collections, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
per = collections.defaultdict(dict)
for r in rows:
    if r["impl"] == "flux_sweep":
        key = (r["m"], r["n"], r["k"], r["out_dtype"])
        c = r["config"]
        per[key][c] = max(per[key].get(c, 0), r["vs_cublas"])
    if r["impl"] == "flux":
        per[(r["m"], r["n"], r["k"], r["out_dtype"])]["heuristic"] = r["vs_cublas"]
configs = sorted({c for v in per.values() for c in v})
print("best variant per config, flux / cuBLASLt FP8:")
for key, v in sorted(per.items()):
    print(key, " ".join(f"{c.replace('_e4m3','')}={v.get(c, 0):.3f}" for c in configs))
for c in configs:
    xs = [v[c] for v in per.values() if c in v]
    print(c, "median", round(statistics.median(xs), 3), "min", round(min(xs), 3), "n", len(xs))
print("best of all configs: median", round(statistics.median(max(x for k, x in v.items() if k != "heuristic") for v in per.values()), 3))
PY
step ar.log 330 flux_gpu_tests --gtest_filter='Jobs/GemmArGpu.*:Jobs/Fp8OpsGpu.*'
grep -E "^\[  (FAILED|PASSED) |FAILED  \]" "$out/ar.log" | tail -8
echo "done at $(( $(date +%s) - T0 )) s"
exit $status
