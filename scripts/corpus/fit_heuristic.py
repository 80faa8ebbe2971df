#!/usr/bin/env python3
"""Fit the GEMM core heuristic's constants (src/gemm/gemm_config.cpp, predict()) to a sweep.

Input: JSON lines (plain, or gzip-compressed as .jsonl.gz) from `flux-bench gemm --corpus tune --sweep` (impl
"flux_sweep": every config x raster x swizzle unsplit, and every split-K factor of the split-capable configs in
the heuristic's order; the stream-K rows are skipped). This script re-implements predict() and the selection rule
of gemm_config.cpp (keep them in step), searches the constants that are not datasheet figures, and reports, per
constant set, the median over shapes of time(best variant) / time(variant the model picks) and cuBLAS / picked.
Fit on the tune half only; judge on the test half with `flux-bench gemm --corpus test` after writing the
constants into gemm_config.cpp (--grid rates --emit FIT.json, then scripts/corpus/apply_fit.py FIT.json).

--grid rates: coordinate descent of the M <= 2048 regime's constants (kRelativeRateMid, kSwapAbMaxM,
kReduceFixedUs, kFillUs, kCoopEpilogueUs, kStreamMaxM), maximizing the geometric mean of best / picked.
--grid rates-large: the same over the shapes with M > 2048 only, of the large-M rate table alone (kRelativeRate;
keys "lrate<id>"): the other constants are shared with the M <= 2048 regime and stay as committed.
The skinny decode configs (ids 5, 6) have an item-time term of their own in predict() (as gemm_config.cpp);
--grid skinny searches only their constants (latency, fill) with the others at their committed values, ranked by
the geometric mean of best / picked; --emit writes the best. --grid gemv: the same for the GEMV config (id 12).
--grid fp8-decode: the same over the e4m3 rows with M <= 64, of the FP8 decode constants (fitted in session 28): sm_bytes8 (the per-SM stream rate of the warp-specialized FP8
configs at M <= kStreamMaxM) and sk8_lat / sk8_fill (the FP8 skinny config's term).
--replay FILE...: no fit; the heuristic's picks recorded by `flux-bench gemm` (impl "flux" rows: config, splits)
against this model copy's choose() with the committed constants, to check that the two are in step.

usage: fit_heuristic.py SWEEP.jsonl... [--sms 132] [--grid all|skinny|gemv|rates|rates-large|fp8-decode] [--no-swap]
       [--admit IDS] [--only KEYS] [--cv N] [--low-hbm] [--emit FIT.json] [--replay]
"""
import argparse
import collections
import gzip
import itertools
import json
import math
import statistics

CONFIGS = [  # id, name, tile_m, tile_n, tile_k, cluster_m, cluster_n, pingpong, split_k, fp8  (gemm_config.h)
    (0, "128x256x64_coop_c2x1", 128, 256, 64, 2, 1, False, False, False),
    (1, "128x128x64_pingpong_c1x2", 128, 128, 64, 1, 2, True, True, False),
    (2, "256x128x64_coop_c1x2", 256, 128, 64, 1, 2, False, False, False),
    (3, "64x256x64_pingpong_c1x2", 64, 256, 64, 1, 2, True, True, False),
    (4, "64x128x64_pingpong_swapab_c1x2", 64, 128, 64, 1, 2, True, True, False),  # swap-AB: a candidate for M <= 64
    (5, "16x64x128_skinny_mma", 16, 64, 128, 1, 1, False, True, False),  # skinny: candidates for M <= tile_m
    (6, "64x64x64_skinny_mma", 64, 64, 64, 1, 1, False, True, False),
    (10, "128x128x64_coop_c1x2", 128, 128, 64, 1, 2, False, False, False),  # whole tiles here (stream-K: not modelled)
    (11, "128x192x64_coop_c2x1", 128, 192, 64, 2, 1, False, False, False),
    (12, "8x16x512_gemv", 8, 16, 512, 1, 1, False, True, False),  # GEMV: skinny, its own term, a candidate at M <= 1
    (13, "16x64x128_pingpong_swapab_c1x1", 16, 64, 128, 1, 1, True, True, False),  # the decode rule's (choose())
    (14, "64x64x128_pingpong_swapab_c1x1", 64, 64, 128, 1, 1, True, True, False),  # the decode rule's (choose())
    (15, "128x144x64_coop_c2x1", 128, 144, 64, 2, 1, False, False, False),
    (16, "128x112x64_coop_c2x1", 128, 112, 64, 2, 1, False, False, False),
    (17, "128x176x64_coop_c2x1", 128, 176, 64, 2, 1, False, False, False),
    # FP8 (e4m3 A and B; the 16-bit configs run bf16 / fp16 only): candidates for e4m3 rows only.
    (7, "128x128x128_coop_c2x1_e4m3", 128, 128, 128, 2, 1, False, False, True),
    (8, "128x128x128_coop_c1x2_e4m3", 128, 128, 128, 1, 2, False, False, True),
    (9, "64x128x128_pingpong_c1x2_e4m3", 64, 128, 128, 1, 2, True, False, True),
    (18, "128x112x128_coop_c2x1_e4m3", 128, 112, 128, 2, 1, False, False, True),  # held back
    (19, "128x144x128_coop_c2x1_e4m3", 128, 144, 128, 2, 1, False, False, True),
    (20, "16x64x256_skinny_e4m3", 16, 64, 256, 1, 1, False, True, True),  # held back; the skinny term, 1-byte elements
]
RATE = {0: 1.00, 1: 1.06, 2: 1.06, 3: 1.00, 4: 1.00, 5: 1.00, 6: 1.00, 7: 2.00, 8: 2.00, 9: 1.20, 10: 1.00, 11: 1.00,
        12: 1.00, 13: 1.00, 14: 1.00, 15: 1.00, 16: 1.00, 17: 1.00, 18: 2.00, 19: 2.10, 20: 1.00}  # M > MID_MAX_M
# gemm_config.cpp kRelativeRateLowHbm: the large-M table of devices below 4 TB/s of HBM (the H100; --low-hbm).
RATE_LOW_HBM = {**RATE, 1: 1.00, 2: 1.30, 11: 1.15, 17: 1.06}
RATE_MID = {0: 1.00, 1: 1.06, 2: 1.30, 3: 1.00, 4: 0.94, 5: 1.00, 6: 1.00, 7: 2.00, 8: 2.00, 9: 1.20, 10: 1.30,
            11: 1.30, 12: 1.00, 13: 1.00, 14: 1.00, 15: 1.20, 16: 1.20, 17: 1.30, 18: 2.00, 19: 2.00,
            20: 1.00}  # --grid rates
MID_MAX_M = 2048
SKINNY_STAGES = 4
SKINNY_CTAS_PER_SM = 2  # resident (shared memory: 4 stages of ~25 KB); the plan measures it (occupancy)
SKINNY_CANDIDATE_MAX_TILE_M = 16  # gemm_config.cpp: the 64-row skinny config is not a candidate
GEMV_CTAS_PER_SM = 4  # gemv_kernel.cuh: registers capped for 4 (kGemvMinCtasPerSm)
GEMV_MAX_M = 1  # gemm_config.cpp kGemvMaxM
MAX_SPLIT, MIN_DEPTH, SWAP_MAX_M = 16, 256, 1024
SQUARE_PINGPONG_YIELD_MAX_M = 64  # gemm_config.cpp kSquarePingpongYieldMaxM


def cdiv(a, b):
    return (a + b - 1) // b


def split_divides(k, s, fp8):
    """gemm_config.cpp split_k_divides: K / S a whole number of 16-byte vectors (16 e4m3 elements, 8 of bf16)."""
    return k % s == 0 and (k // s) % (16 if fp8 else 8) == 0


def jsonl_lines(paths):
    """The lines of JSON-lines files, gzipped (.gz) or not."""
    for path in paths:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            yield from f


def predict(c, m, n, k, s, conc, K):
    cid, name, tm, tn, tk, cm, cn, pp, _, fp8 = c
    es = 1.0 if fp8 else 2.0  # bytes of an element of A and B (C: 2)
    units = cdiv(cdiv(m, tm), cm) * cdiv(cdiv(n, tn), cn)
    waves = cdiv(units * s, conc)
    if "gemv" in name:  # gemm_config.cpp: the skinny form, the GEMV's bytes in flight and constants
        in_flight = tn * tk * es * (2.0 if m <= 2 else 1.0)
        comp = K["gv_fill"] + waves * (tn * (k // s) * es / (in_flight / K["gv_lat"]))
    elif "skinny" in name:  # their item time is a term of its own (gemm_config.cpp); FP8's constants may differ
        lat, fill = (K["sk8_lat"], K["sk8_fill"]) if fp8 else (K["sk_lat"], K["sk_fill"])
        in_flight = (SKINNY_STAGES - 1) * tn * tk * es
        comp = fill + waves * (tn * (k // s) * es / (in_flight / lat))
    else:
        ksteps = cdiv(k // s, tk)
        # gemm_config.cpp: two tables (--grid rates fits the first, --grid rates-large the second)
        rate = K.get(f"rate{cid}", RATE_MID[cid]) if m <= MID_MAX_M else K.get(f"lrate{cid}", RATE[cid])
        mma = 2.0 * tm * tn * tk / (K["sm_flops"] * rate)
        stream = K["sm_bytes8"] if fp8 else K["sm_bytes"]  # --grid fp8-decode fits sm_bytes8
        bw = stream if m <= K["stream_max_m"] else K["sm_bytes_l2"]
        load = (min(m, tm) + tn) * tk * es / bw
        item = ksteps * max(mma, load) + (0.0 if pp else K["coop_epi"])
        comp = K["fill"] + waves * item
    by = (m * k + n * k) * es + m * n * 2.0 + (s * m * n * 4.0 if s > 1 else 0.0)
    t = max(comp, by / K["hbm"])
    if s > 1:
        t += K["reduce_fixed"] + (s * m * n * 4.0 + m * n * 2.0) / K["hbm"]
    return t, units


DECODE_SWAP_MAX_M, DECODE_SPLIT_UNITS_DIV = 16, 6  # gemm_config.cpp: the decode rule (configs 13 and 14)
DECODE_WIDE_MIN_M, DECODE_WIDE_MAX_M = 33, 64


# Configs compiled and swept but not candidates of gemm_config.cpp's heuristic (held_back) until a sweep fits their
# rates or terms (replayed as candidates with --admit): FP8 128x112x128 (18). (The FP8 skinny config, 20, was until
# session 28's fp8-decode fit.)
HELD_BACK = {18}


def choose(m, n, k, sms, K, dtype="bf16"):
    fp8 = dtype == "e4m3"
    wide = DECODE_WIDE_MIN_M <= m <= DECODE_WIDE_MAX_M
    if (m <= DECODE_SWAP_MAX_M or wide) and m <= K["swap_max_m"] and not fp8:  # the decode rule replaces the model
        c = next(c for c in CONFIGS if c[0] == (14 if wide else 13))
        units = cdiv(m, c[2]) * cdiv(n, c[3])
        s = 1
        if units * DECODE_SPLIT_UNITS_DIV < sms:
            for t in range(2, MAX_SPLIT + 1):
                if split_divides(k, t, False) and k // t >= MIN_DEPTH and units * t * 4 <= sms * 3 \
                        and units * t <= 2 * sms:
                    s = t
        return predict(c, m, n, k, s, sms, K)[0], c, s
    best = None
    for c in CONFIGS:
        if c[9] != fp8:  # compiled for the other input types
            continue
        if c[0] in (13, 14):  # the decode rule's only
            continue
        if c[0] in HELD_BACK and c[0] not in K.get("admit", ()):
            continue
        if c[0] in K.get("exclude", ()):  # --cv's baseline without the --admit configs
            continue
        if "swapab" in c[1] and m > K["swap_max_m"]:
            continue
        # gemm_config.cpp: up to kSquarePingpongYieldMaxM the 128x128 ping-pong config yields to swap-AB where that
        # is a candidate.
        if c[0] == 1 and m <= SQUARE_PINGPONG_YIELD_MAX_M and m <= K["swap_max_m"]:
            continue
        gemv = "gemv" in c[1]
        skinny = "skinny" in c[1] or gemv
        if skinny and m > c[2]:
            continue
        if gemv and m > GEMV_MAX_M:
            continue
        if skinny and c[2] > SKINNY_CANDIDATE_MAX_TILE_M:  # the 64-row one: never the best (gemm_config.cpp)
            continue
        conc = sms // (c[5] * c[6]) * (GEMV_CTAS_PER_SM if gemv else SKINNY_CTAS_PER_SM if skinny else 1)
        cands = [1]
        if c[8]:
            units = cdiv(cdiv(m, c[2]), c[5]) * cdiv(cdiv(n, c[3]), c[6])
            for s in range(2, MAX_SPLIT + 1):
                if not split_divides(k, s, fp8) or k // s < MIN_DEPTH:
                    continue
                if units * s > 2 * conc:
                    break
                cands.append(s)
        for s in cands:
            t, _ = predict(c, m, n, k, s, conc, K)
            bar = 1.0 - K["split_gain"] if s > 1 else 1.0 - 1e-9
            if best is None or t < best[0] * bar:
                best = (t, c, s)
    return best


# Swap-AB rows measured before this time name their raster in the kernel's view (its M over C's N); since then the
# order is over C's units for every config, and the kernel's row-major walk is C's column-major one.
SWAP_ORDER_IN_C_SINCE = "2026-12-04T20:30:00Z"


def order_of(c, m, n, sms):
    """The heuristic's raster / swizzle for config c (gemm_config.cpp)."""
    _, _, tm, tn, _, cm, cn, pp, _, _ = c
    um, un = cdiv(cdiv(m, tm), cm), cdiv(cdiv(n, tn), cn)
    if "skinny" in c[1] or "gemv" in c[1]:
        return "row", 1
    if "swapab" in c[1]:  # bands of the kernel's M (C's unit columns): C's column-major order
        s = 1
        while s * 2 <= 8 and s * 2 <= un:
            s *= 2
        return "col", s
    raster = "col" if un >= um else "row"  # ping-pong too since 2026-12-07 (gemm_config.cpp kPingpongSwizzle)
    minor = un if raster == "col" else um
    conc = sms // (cm * cn)
    s = 1
    while s * 2 <= 8 and (pp or s * 2 * s * 2 <= conc) and s * 2 <= minor:
        s *= 2
    return raster, s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep", nargs="+")
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--grid", choices=["all", "skinny", "gemv", "rates", "rates-large", "fp8-decode"], default="all")
    ap.add_argument("--replay", action="store_true", help="the files are `flux-bench gemm` runs, not sweeps: compare "
                    "their picks (impl flux: config, splits) with choose() under the committed constants")
    ap.add_argument("--no-swap", action="store_true", help="replay the selection of plans without swap-AB "
                    "(GemmOptions::allow_swap_ab = false)")
    ap.add_argument("--admit", default="", help="config ids held back by gemm_config.cpp (HELD_BACK) to replay as "
                    "candidates, comma-separated: their rates are fitted with --grid rates / rates-large")
    ap.add_argument("--only", default="", help="--grid rates / rates-large: search only these constants (comma-separated "
                    "keys, e.g. rate15,rate16), the others at their committed values (a fit on another GPU's sweep that "
                    "should move only the admitted configs)")
    ap.add_argument("--cv", type=int, default=0, help="--grid rates / rates-large / skinny / gemv / fp8-decode: also "
                    "fit on all but one of N folds of the shapes and score the held-out fold against the constants "
                    "without the --admit configs (N >= 2)")
    ap.add_argument("--fix", default="", help="--grid skinny / gemv / fp8-decode: no search, score these values "
                    "(comma-separated KEY=VALUE over the grid's keys, e.g. sm_bytes8=35000,sk8_lat=8,sk8_fill=8) "
                    "against the committed constants: the judge of a fit on a sweep of the test half")
    ap.add_argument("--low-hbm", action="store_true", help="start from (and compare with) the large-M table of "
                    "devices below 4 TB/s of HBM (RATE_LOW_HBM, gemm_config.cpp kRelativeRateLowHbm) instead of RATE")
    ap.add_argument("--emit", help="--grid rates / rates-large / skinny: write the fitted constants as JSON "
                    "(scripts/corpus/apply_fit.py)")
    a = ap.parse_args()
    if a.replay:
        replay(a)
        return
    shapes = collections.defaultdict(dict)
    cublas = {}
    for line in jsonl_lines(a.sweep):
        r = json.loads(line)
        # Whole-tile variants only: stream-K is not modelled here (scripts/corpus/fit_stream_k.py; its rows carry the
        # same config / raster / swizzle keys).
        if r.get("impl") != "flux_sweep" or not r.get("max_rel_err", 0) < 1e-2 or r.get("stream_k"):
            continue
        if a.grid == "rates-large" and r["m"] <= MID_MAX_M:
            continue
        if a.grid == "fp8-decode" and (r["dtype"] != "e4m3" or r["m"] > 64):
            continue
        if a.no_swap and "swapab" in r["config"]:  # not a variant such plans can run
            continue
        key = (r["dtype"], r["m"], r["n"], r["k"])
        raster = r["raster"]
        if "swapab" in r["config"] and r.get("date", "") < SWAP_ORDER_IN_C_SINCE:
            raster = "col" if raster == "row" else "row"  # recorded in the kernel's view: the same walk in C's
        shapes[key][(r["config"], raster, r["swizzle"], r.get("splits", 1))] = r["median_ms"]
        cublas[key] = r["cublas_ms"]
    base = committed_constants(a)
    grid = dict(sm_bytes=[1e4, 2e4, 3e4, 6e4, 1.6e5], stream_max_m=[128, 256, 512], fill=[1.0, 4.0, 8.0],
                reduce_fixed=[1.0, 2.0, 4.0], split_gain=[0.0, 0.05])
    if a.grid == "skinny":
        grid = dict(sk_lat=[0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1e3], sk_fill=[0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 9.0])
    if a.grid == "gemv":
        grid = dict(gv_lat=[0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 1e3], gv_fill=[0.0, 1.0, 2.0, 4.0, 6.0, 9.0, 12.0])
    if a.grid == "fp8-decode":
        grid = dict(sm_bytes8=[1.5e4, 2e4, 2.5e4, 3e4, 3.5e4, 4e4, 5e4, 6e4],
                    sk8_lat=[2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 1e3],
                    sk8_fill=[0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 12.0, 15.0, 20.0])
    if a.fix:
        if a.grid not in ("skinny", "gemv", "fp8-decode"):
            raise SystemExit("fit_heuristic: --fix is for --grid skinny / gemv / fp8-decode")
        fixed = dict(kv.split("=", 1) for kv in a.fix.split(","))
        unknown = set(fixed) - set(grid)
        if unknown or set(grid) - set(fixed):
            raise SystemExit(f"fit_heuristic: --fix must give every key of the grid ({sorted(grid)}), got {sorted(fixed)}")
        grid = {k: [float(v)] for k, v in fixed.items()}
    def score(K, by_m=None, keys=None):  # keys: the shapes to score (default all)
        q, vc, missing = [], [], 0
        for key in (shapes if keys is None else keys):
            variants = shapes[key]
            _, m, n, k = key
            t, c, s = choose(m, n, k, a.sms, K, key[0])
            raster, swz = order_of(c, m, n, a.sms)
            picked = variants.get((c[1], raster, swz, s))
            if picked is None:  # split rows carry the order the plan chose; match on (config, splits)
                picked = next((v for (cf, _, _, sp), v in variants.items() if cf == c[1] and sp == s), None)
            if picked is None:
                missing += 1
                continue
            q.append(min(variants.values()) / picked)
            vc.append(cublas[key] / picked)
            if by_m is not None:
                by_m[m].append(cublas[key] / picked)
        if not q:  # no pick of these constants was measured in the sweep: the worst score
            return 0.0, 0.0, 0.0, 0.0, 0.0, missing
        geo = math.exp(sum(math.log(x) for x in q) / len(q))
        return geo, statistics.median(vc), statistics.median(q), min(vc), min(q), missing

    def print_by_m(label, consts):
        per_m = collections.defaultdict(list)
        score(consts, per_m)
        print(f"{label} picks vs cublas by M:", {m: round(statistics.median(x), 3) for m, x in sorted(per_m.items())})

    if not shapes:
        raise SystemExit("fit_heuristic: no sweep rows" + (f" with M > {MID_MAX_M}" if a.grid == "rates-large" else ""))
    if a.grid in ("rates", "rates-large"):
        # Coordinate descent (the grid of every combination is too large): each constant in turn takes the value of
        # its list that maximizes the geometric mean of best / picked over the shapes, until nothing moves.
        rates = [0.80, 0.85, 0.90, 0.94, 0.97, 1.00, 1.03, 1.06, 1.10, 1.15, 1.20, 1.30, 1.40, 1.50, 1.65]
        swept = {key[0] == "e4m3" for key in shapes}  # the input types swept: only their configs' rates are searched
        if True in swept:
            rates = rates + [1.80, 2.00, 2.10, 2.20, 2.40]  # the FP8 configs' rates (2x the 16-bit MMA rate)
        if a.grid == "rates":
            space = {f"rate{c[0]}": rates for c in CONFIGS if "skinny" not in c[1] and "gemv" not in c[1] and c[0] != 0
                     and c[9] in swept and (c[0] not in HELD_BACK or c[0] in base["admit"])}
            space.update(swap_max_m=[64, 128, 256, 512, 1024, 1 << 30],
                         reduce_fixed=[1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 11.0, 15.0], fill=[1.0, 4.0, 8.0, 12.0],
                         coop_epi=[0.0, 0.3, 0.6, 1.0, 1.5, 2.5], stream_max_m=[64, 128, 256, 512])
        else:  # the large-M table; swap-AB and the skinny configs are not candidates there
            space = {f"lrate{c[0]}": rates for c in CONFIGS
                     if "skinny" not in c[1] and "gemv" not in c[1] and "swapab" not in c[1] and c[0] != 0
                     and c[9] in swept and (c[0] not in HELD_BACK or c[0] in base["admit"])}
        if a.only:
            keep = set(a.only.split(","))
            unknown = keep - set(space)
            if unknown:
                raise SystemExit(f"fit_heuristic: --only names constants outside the search space: {sorted(unknown)}")
            space = {k: v for k, v in space.items() if k in keep}
        # Start from the committed constants.
        K = dict(base, **{f"rate{cid}": r for cid, r in RATE_MID.items()},
                 **{f"lrate{cid}": r for cid, r in (RATE_LOW_HBM if a.low_hbm else RATE).items()})
        print(f"{len(shapes)} shapes; start:", "geo %.4f median vs cublas %.3f (best/picked median %.3f, min vc %.3f, "
              "min q %.3f, %d unmeasured picks)" % score(K))
        def descend(K, keys=None, log=True):
            # A candidate whose picks the sweep did not measure on more shapes than the start's would be scored on
            # fewer shapes (the unmeasured ones dropped): never taken.
            K = dict(K)
            start_missing = score(K, keys=keys)[5]
            for sweep_round in range(6):
                moved = False
                for key, values in space.items():
                    best_v, best_s = K[key], score(K, keys=keys)
                    for v in values:
                        sc = score(dict(K, **{key: v}), keys=keys)
                        if sc[0] > best_s[0] + 1e-6 and sc[5] <= start_missing:
                            best_v, best_s = v, sc
                    if best_v != K[key]:
                        K[key], moved = best_v, True
                if log:
                    print(f"round {sweep_round}:", "geo %.4f median vs cublas %.3f (best/picked median %.3f, min vc "
                          "%.3f, min q %.3f, %d unmeasured picks)" % score(K, keys=keys), {k: K[k] for k in space})
                if not moved:
                    break
            return K

        if a.cv > 1:
            # Held-out check of the fit itself (not a judge of the heuristic: the test half is): fold f of the shapes
            # (every a.cv-th in key order) is scored with the constants descended on the other folds, against the
            # committed constants without the --admit configs. The descents start with the --admit configs' rates at
            # 1.00 (the committed ones may have been fitted on these very shapes).
            keys = sorted(shapes)
            neutral = dict(K, **{k: 1.0 for k in space if k.startswith(("rate", "lrate"))
                                 and int(k.lstrip("lrate")) in base["admit"]})
            for fold in range(a.cv):
                test = [key for i, key in enumerate(keys) if i % a.cv == fold]
                train = [key for i, key in enumerate(keys) if i % a.cv != fold]
                Kf = descend(neutral, train, log=False)
                fmt = lambda sc: "geo %.4f median vs cublas %.3f" % sc[:2]
                print(f"cv fold {fold} ({len(test)} held-out shapes): without the --admit configs",
                      fmt(score(dict(K, exclude=base["admit"]), keys=test)), "| fitted on the other folds",
                      fmt(score(Kf, keys=test)), {k: Kf[k] for k in space})
        K = descend(K)
        # committed: gemm_config.cpp today (its two rate tables are RATE_MID / RATE)
        print_by_m("committed", dict(base, exclude=base["admit"]))
        print_by_m("fitted", K)
        if a.emit:
            with open(a.emit, "w") as f:
                json.dump({k: K[k] for k in space}, f)
        results = [score(K)[1:5] + (K,)]
        grid = space
    else:
        scored = []  # (score(K), K) for every combination of the grid
        for values in itertools.product(*grid.values()):
            K = dict(base, **dict(zip(grid.keys(), values)))
            scored.append((score(K), K))
        if a.grid in ("skinny", "gemv", "fp8-decode"):
            # Ranked by the geometric mean of best / picked (the objective of --grid rates), then emitted.
            scored.sort(key=lambda t: (-t[0][0], -t[0][1]))
            print(f"{len(shapes)} shapes; committed:", "geo %.4f median vs cublas %.3f (best/picked median %.3f, "
                  "min vc %.3f, min q %.3f, %d unmeasured picks)" % score(base))
            if base["admit"]:  # gemm_config.cpp as it is: the held-back configs not candidates
                print("committed without the --admit configs:", "geo %.4f median vs cublas %.3f (best/picked median "
                      "%.3f, min vc %.3f, min q %.3f, %d unmeasured picks)" % score(dict(base, exclude=base["admit"])))
            for sc, K in scored[:10]:
                print(f"geo {sc[0]:.4f} vs cublas median {sc[1]:.3f} (min {sc[3]:.3f}, min q {sc[4]:.3f}):",
                      {k: K[k] for k in grid})
            if a.emit:
                with open(a.emit, "w") as f:
                    json.dump({k: scored[0][1][k] for k in grid}, f)
            if a.cv > 1:
                # As --grid rates' --cv: fold f (every a.cv-th shape in key order) scored with the grid's best on the
                # other folds, against the committed constants without the --admit configs.
                keys = sorted(shapes)
                fmt = lambda sc: "geo %.4f median vs cublas %.3f" % sc[:2]
                for fold in range(a.cv):
                    test = [key for i, key in enumerate(keys) if i % a.cv == fold]
                    train = [key for i, key in enumerate(keys) if i % a.cv != fold]
                    Kf = max((K for _, K in scored), key=lambda K: score(K, keys=train)[:2])
                    print(f"cv fold {fold} ({len(test)} held-out shapes): committed without the --admit configs",
                          fmt(score(dict(base, exclude=base["admit"]), keys=test)), "| fitted on the other folds",
                          fmt(score(Kf, keys=test)), {k: Kf[k] for k in grid})
            print_by_m("committed", dict(base, exclude=base["admit"]))
            print_by_m("fitted", scored[0][1])
            return
        results = [(sc[1], sc[2], sc[3], sc[4], K) for sc, K in scored]
    results.sort(key=lambda r: (-r[0], -r[1]))
    print(f"{len(shapes)} shapes")
    for vc, q, mn, qmn, K in results[:10]:
        print(f"vs cublas median {vc:.3f} (min {mn:.3f}), vs best variant {q:.3f} (min {qmn:.3f}):",
              {k: K[k] for k in grid})
    oracle = statistics.median(cublas[key] / min(v.values()) for key, v in shapes.items())
    print(f"oracle (best variant per shape) vs cublas median {oracle:.3f}")
    by_m = collections.defaultdict(list)
    for key, v in shapes.items():
        by_m[key[1]].append(cublas[key] / min(v.values()))
    print("oracle by M:", {m: round(statistics.median(x), 3) for m, x in sorted(by_m.items())})


def committed_constants(a):
    """gemm_config.cpp's constants as main() starts from them (the rate tables are RATE_MID / RATE)."""
    return dict(sm_flops=5.3e6, sm_bytes=2.0e4, sm_bytes_l2=1.6e5, stream_max_m=64, hbm=4.0e6, fill=12.0, coop_epi=0.3,
                reduce_fixed=8.0, split_gain=0.0, sk_lat=6.0, sk_fill=1.0, gv_lat=2.0, gv_fill=1.0,
                sm_bytes8=3.5e4, sk8_lat=8.0, sk8_fill=8.0,
                swap_max_m=0 if a.no_swap else SWAP_MAX_M, admit={int(x) for x in a.admit.split(",") if x})


def replay(a):
    K = committed_constants(a)
    if a.low_hbm:
        K.update({f"lrate{cid}": r for cid, r in RATE_LOW_HBM.items()})
    rows = same = 0
    differ = collections.Counter()
    for line in jsonl_lines(a.sweep):
        r = json.loads(line)
        if r.get("impl") != "flux" or r.get("stream_k") or "forced" in r.get("reason", "") or \
                "tuning cache" in r.get("reason", ""):
            continue
        _, c, s = choose(r["m"], r["n"], r["k"], a.sms, K, r["dtype"])
        rows += 1
        if (c[1], s) == (r["config"], r.get("splits", 1)):
            same += 1
        else:
            differ[(r["dtype"], r["config"], r.get("splits", 1), c[1], s)] += 1
    print(f"{same} of {rows} picks as choose() (config and splits)")
    for (dt, was, ws, model, ms), count in differ.most_common(12):
        print(f"  {count} x {dt}: flux-bench {was} split {ws}, choose() {model} split {ms}")


if __name__ == "__main__":
    main()
