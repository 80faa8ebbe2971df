#!/usr/bin/env python3
"""Fit the stream-K iteration cost of the GEMM heuristic (kStreamKIterCost in src/gemm/gemm_config.cpp).

Inputs (JSON lines of one tuning-half run each, same rows): `flux-bench gemm --corpus tune ...` with
FLUX_GEMM_STREAM_K=off (the whole-tile choice; its "reason" holds the heuristic's predicted time) and with
FLUX_GEMM_CONFIG=128x128x64_coop_c1x2 FLUX_GEMM_STREAM_K=on (stream-K's measured time on every row where it
applies). For each candidate cost f the script re-implements predict()'s stream-K branch for that config (keep it
in step with gemm_config.cpp) and takes stream-K where it is predicted faster than the whole-tile choice (a
simplification: select_gemm_config() also asks for kStreamKMinGain over the same config whole-tile, which this
config's whole-tile prediction gives except on load-bound rows, M <= 256, with a near tie); it
reports the median flux / cuBLAS over all rows and the chosen rows' speed-up (each run's time normalized by its own
cuBLAS). Fit on the tuning half only; the test half judges the result (`flux-bench gemm --corpus test`).

usage: fit_stream_k.py OFF.jsonl[.gz] FORCED_SK.jsonl[.gz]
"""
import json
import math
import re
import statistics
import sys

# The JSON-lines reader (gzipped or not): fit_heuristic.py's, beside this script.
from fit_heuristic import jsonl_lines

SM_FLOPS, STREAM_BYTES, L2_BYTES, STREAM_MAX_M, HBM = 5.3e6, 2.0e4, 1.6e5, 256, 4.0e6  # gemm_config.cpp
FILL, COOP_EPI, FIXUP_BYTES, FIXUP_FLAG = 8.0, 0.3, 1.0e5, 1.0
TILE_M, TILE_N, TILE_K, CLUSTER_N, WORKERS, RATE = 128, 128, 64, 2, 66, 1.00  # 128x128x64_coop_c1x2, 132 SMs


def cdiv(a, b):
    return (a + b - 1) // b


def stream_k_shape(units, workers, k_tiles):  # src/gemm/stream_k.h
    if units % workers == 0 or k_tiles <= 1:
        return None
    waves = units // workers
    dp = (waves - 1) * workers if waves >= 2 else 0
    sk = units - dp
    return None if sk * k_tiles < 2 * workers else (dp, sk)


def predict_stream_k(m, n, k, cost):
    units = cdiv(m, TILE_M) * cdiv(cdiv(n, TILE_N), CLUSTER_N)
    k_tiles = cdiv(k, TILE_K)
    shape = stream_k_shape(units, WORKERS, k_tiles)
    if shape is None:
        return None
    dp, sk = shape
    mma = 2.0 * TILE_M * TILE_N * TILE_K / (SM_FLOPS * RATE)
    load = (min(m, TILE_M) + TILE_N) * TILE_K * 2.0 / (STREAM_BYTES if m <= STREAM_MAX_M else L2_BYTES)
    whole = dp // WORKERS
    iters = whole * k_tiles + cost * math.ceil(sk * k_tiles / WORKERS)
    pieces, peers = cdiv(sk, WORKERS) + 1, cdiv(WORKERS, sk)
    fixup = FIXUP_FLAG + (1 + peers) * TILE_M * TILE_N * 4.0 / FIXUP_BYTES
    compute = FILL + iters * max(mma, load) + (whole + pieces) * COOP_EPI + fixup
    return max(compute, ((m * k + n * k) * 2.0 + m * n * 2.0) / HBM)


def load(path):
    rows = [json.loads(line) for line in jsonl_lines([path])]
    return {(r["m"], r["n"], r["k"]): r for r in rows if r["impl"] == "flux"}


def main():
    off, forced = load(sys.argv[1]), load(sys.argv[2])
    print("off: median flux / cuBLAS %.4f over %d rows" % (statistics.median(r["vs_cublas"] for r in off.values()), len(off)))
    for cost in (1.0, 1.2, 1.4, 1.5, 1.6, 1.8, 2.0):
        ratios, chosen = [], []
        for key, o in off.items():
            predicted = float(re.search(r"predicted fastest \(([0-9.e+]+) us", o["reason"]).group(1))
            q, s = predict_stream_k(*key, cost), forced.get(key)
            r = 1.0
            if q is not None and s is not None and s["stream_k"] and q < predicted:
                r = s["vs_cublas"] / o["vs_cublas"]
                chosen.append(r)
            ratios.append(r * o["vs_cublas"])
        geo = math.exp(sum(map(math.log, chosen)) / len(chosen)) if chosen else float("nan")
        print("cost %.1f: median %.4f; stream-K on %d rows, %d faster, geometric mean %.3f" %
              (cost, statistics.median(ratios), len(chosen), sum(r > 1 for r in chosen), geo))


if __name__ == "__main__":
    main()
