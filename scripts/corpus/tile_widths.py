#!/usr/bin/env python3
"""Which extra tile widths (128 x N_t cooperative) would fill the H200's SMs best at mid M: a wave-fill model over
the corpus (bench/corpus/gemm_corpus.csv), not a measurement.

Fill of a config on an M x N output: useful elements / (waves x SMs x tile elements), waves = ceil(tiles / SMs) (a
persistent kernel's last wave idles the rest). Per shape the best fill over the compiled non-decode tiles (C's
M x N: 128x128, 256x128, 128x192, 128x256, 64x256, swap-AB 64x128), then with one or two extra widths added; the
geometric mean over the tuning half's distinct (M, N) per M, and overall for 128 <= M <= 2048. The test half is
printed beside it to show the ranking carries over (it is not used to choose).
--cublas SWEEP...: the tile widths (along C's N) of cuBLAS's kernels on the tuning half's shapes with 128 <= M <=
2048 in those runs (flux-bench's cublas rows: the algo's cublasLt tile, named in the toolkit's cublasLt.h).

usage: tile_widths.py [--corpus bench/corpus/gemm_corpus.csv] [--sms 132] [--cublas SWEEP.jsonl[.gz]...]
"""
import argparse
import collections
import csv
import gzip
import json
import itertools
import math
import re
import statistics

BASE = [(128, 128), (256, 128), (128, 192), (128, 256), (64, 256), (128, 64)]
WIDTHS = (96, 112, 144, 160, 176, 208, 224)


def fill(m, n, tm, tn, sms):
    tiles = math.ceil(m / tm) * math.ceil(n / tn)
    return m * n / (math.ceil(tiles / sms) * sms * tm * tn)


def geo(xs):
    return math.exp(statistics.mean(math.log(x) for x in xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="bench/corpus/gemm_corpus.csv")
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--cublas", nargs="*", default=[])
    ap.add_argument("--cublas-header", default="/usr/local/cuda/include/cublasLt.h")
    a = ap.parse_args()
    rows = list(csv.DictReader(open(a.corpus)))
    if a.cublas:
        tune = {(int(r["m"]), int(r["n"]), int(r["k"])) for r in rows if r["half"] == "tune"}
        names = {int(v): n for n, v in re.findall(r"CUBLASLT_MATMUL_TILE_(\w+) = (\d+)", open(a.cublas_header).read())}
        widths, seen = collections.Counter(), set()
        for path in a.cublas:
            for line in (gzip.open(path, "rt") if path.endswith(".gz") else open(path)):
                r = json.loads(line)
                key = (r["m"], r["n"], r["k"])
                if r.get("impl") != "cublas" or key in seen or key not in tune or not 128 <= r["m"] <= 2048:
                    continue
                seen.add(key)
                t = re.search(r"tile (\d+)", r.get("algo", ""))  # cuBLAS's tile is (its M = C's N) x (C's M)
                widths[names[int(t.group(1))].split("x")[0] if t else "(no cublasLt algo)"] += 1
        print(f"cuBLAS's tile width along C's N on {len(seen)} tuning-half shapes:", widths.most_common(10))
    pairs = [((128, x), (128, y)) for x, y in itertools.combinations(WIDTHS, 2)]
    for half in ("tune", "test"):
        shapes = sorted({(int(r["m"]), int(r["n"])) for r in rows if r["half"] == half and 128 <= int(r["m"]) <= 2048})
        def score(extra, only_m=None):
            sel = [s for s in shapes if only_m is None or s[0] == only_m]
            return geo([max(fill(m, n, tm, tn, a.sms) for tm, tn in BASE + list(extra)) for m, n in sel])
        ranked = sorted(pairs, key=lambda p: -score(p))
        print(f"{half} half, {len(shapes)} (M, N) with 128 <= M <= 2048: compiled tiles geo fill {score(()):.3f}")
        for p in ranked[:6]:
            per_m = " ".join(f"M={m}:{score(p, m):.3f}" for m in (128, 256, 512, 1024, 2048))
            print(f"  + {p[0][1]:3d} + {p[1][1]:3d}: {score(p):.3f}  ({per_m})")
        print("  compiled:        " + " ".join(f"M={m}:{score((), m):.3f}" for m in (128, 256, 512, 1024, 2048)))


if __name__ == "__main__":
    main()
