#!/usr/bin/env python3
"""Fit the time term of the decode rule's two configs (16x64x128 / 64x64x128 ping-pong swap-AB, cluster 1x1) in the
GEMM heuristic's model (kDecode* in src/gemm/gemm_config.cpp: predict()'s decode branch; keep the two in step).

The rule picks these configs without the model (gemm_config.cpp says why), so the term decides nothing there; it is
the GemmSelection::predicted_us of those picks, which the fused ops' overlap rule reads (src/ops/common/
fused_rule.cpp). The generic term ran 2.2-3.4x high on them. The form: each CTA streams its unit's 64 columns of B
(64 x K / S elements) at a per-CTA rate of its config, after a fill; waves over the SMs; the HBM bound; split-K adds
a fixed reduction cost and the partials' bytes at HBM speed, as predict() does for every config.

Inputs: tuning-half sweeps (`flux-bench gemm --corpus tune ... --sweep`, rows "flux_sweep"): the fit. --test:
judge runs on the test half (`flux-bench gemm --corpus test ...`, rows "flux" picked by the decode rule): reported,
never fitted on.

usage: fit_decode_time.py SWEEP.jsonl[.gz]... [--test JUDGE.jsonl[.gz]...] [--sms 132]
"""
import argparse
import collections
import itertools
import json
import math
import statistics

# The config table, the decode rule's M ranges and the sweep reader: fit_heuristic.py's (beside this script).
from fit_heuristic import CONFIGS as ALL_CONFIGS, DECODE_SWAP_MAX_M, DECODE_WIDE_MAX_M, DECODE_WIDE_MIN_M, cdiv, \
    jsonl_lines

HBM = 4.0e6  # bytes per us (gemm_config.cpp kHbmBytesPerUs)
RULE_IDS = (13, 14)  # the decode rule's configs
CONFIGS = {c[1]: c for c in ALL_CONFIGS if c[0] in RULE_IDS}  # name -> (id, name, tile_m, tile_n, ...)


def in_rule(cfg, m):
    """The decode rule's M range of each config (kDecodeSwapMaxM, kDecodeWideMinM / MaxM)."""
    return m <= DECODE_SWAP_MAX_M if CONFIGS[cfg][0] == 13 else DECODE_WIDE_MIN_M <= m <= DECODE_WIDE_MAX_M


def predict(cfg, m, n, k, s, sms, fill, rates, reduce_fixed):
    es = 2.0
    _, _, tile_m, tile_n = CONFIGS[cfg][:4]
    units = cdiv(m, tile_m) * cdiv(n, tile_n)
    waves = cdiv(units * s, sms)
    item = tile_n * (k // s) * es
    us = max(fill + waves * item / rates[cfg], ((m * k + n * k) * es + m * n * 2.0 + (s * m * n * 4.0 if s > 1 else 0)) / HBM)
    if s > 1:
        us += reduce_fixed + (s * m * n * 4.0 + m * n * 2.0) / HBM
    return us


def error(rows, params, sms):
    logs = [abs(math.log(predict(c, m, n, k, s, sms, *params) / t)) for (c, m, n, k, s), t in rows]
    return statistics.mean(logs), statistics.median(logs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep", nargs="+")
    ap.add_argument("--test", nargs="*", default=[])
    ap.add_argument("--sms", type=int, default=132)
    a = ap.parse_args()
    # Tuning half: each (shape, config, splits) at the median of its measured orders (they differ by ~1% here).
    times = collections.defaultdict(list)
    for line in jsonl_lines(a.sweep):
        r = json.loads(line)
        if r.get("impl") != "flux_sweep" or r["config"] not in CONFIGS or not r.get("max_rel_err", 1) < 1e-2:
            continue
        if not in_rule(r["config"], r["m"]):  # the M range where the rule runs the config
            continue
        times[(r["config"], r["m"], r["n"], r["k"], r.get("splits", 1))].append(r["median_ms"] * 1e3)
    fit_rows = [(key, statistics.median(v)) for key, v in times.items()]
    test_rows = []
    for line in jsonl_lines(a.test):
        r = json.loads(line)
        if r.get("impl") == "flux" and r["config"] in CONFIGS and "decode rule" in r.get("reason", ""):
            test_rows.append(((r["config"], r["m"], r["n"], r["k"], r.get("splits", 1)), r["median_ms"] * 1e3))
    print(f"fit rows {len(fit_rows)} (tuning half), test rows {len(test_rows)} (test half)")
    best = None
    names = list(CONFIGS)
    for fill, r16, r64, red in itertools.product([3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
                                                 [4e4, 5e4, 6e4, 7e4, 8e4, 9e4, 1.0e5, 1.2e5],
                                                 [6e4, 7e4, 8e4, 9e4, 1.0e5, 1.2e5, 1.4e5, 1.6e5],
                                                 [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0]):
        params = (fill, {names[0]: r16, names[1]: r64}, red)
        e = error(fit_rows, params, a.sms)
        if best is None or e[0] < best[0][0]:
            best = (e, params)
    (mean_fit, med_fit), params = best
    print(f"fitted: fill {params[0]} us, per-CTA rates {params[1][names[0]] / 1e3:.0f} / {params[1][names[1]] / 1e3:.0f} "
          f"GB/s (16 / 64 rows), reduce {params[2]} us")
    print(f"tuning half: mean |log(pred / measured)| {mean_fit:.3f}, median {med_fit:.3f} "
          f"(median |error| {math.exp(med_fit) - 1:.1%})")
    if test_rows:
        mean_t, med_t = error(test_rows, params, a.sms)
        ratios = [predict(c, m, n, k, s, a.sms, *params) / t for (c, m, n, k, s), t in test_rows]
        print(f"test half: mean |log| {mean_t:.3f}, median {med_t:.3f} (median |error| {math.exp(med_t) - 1:.1%}); "
              f"pred / measured median {statistics.median(ratios):.2f}, min {min(ratios):.2f}, max {max(ratios):.2f}")


if __name__ == "__main__":
    main()
