#!/usr/bin/env python3
"""Summarize flux-bench JSON lines: the GEMM bar (flux / cublas and flux_hooks / cublas throughput over
all rows: median, min) and, for p2p rows, bandwidths and the signal round trip.
usage: scripts/summarize_bench.py FILE.jsonl[.gz] [...]"""
import gzip
import json
import statistics
import sys


def main(paths):
    rows = [json.loads(line) for p in paths for line in (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) if line.strip()]
    gemm = [r for r in rows if r.get("op") == "gemm" and r.get("impl") in ("flux", "flux_hooks")]
    for impl in ("flux", "flux_hooks"):
        ratios = sorted(r["vs_cublas"] for r in gemm if r["impl"] == impl)
        if ratios:
            print(f"{impl:10s} / cublas over {len(ratios)} rows: median {statistics.median(ratios):.3f}, "
                  f"min {ratios[0]:.3f}, max {ratios[-1]:.3f}")
    errs = [r["max_rel_err"] for r in rows if r.get("op") == "gemm" and r.get("max_rel_err") is not None]
    if errs:
        print(f"gemm max_rel_err over {len(errs)} checked rows: max {max(errs):.2e}")
    for r in rows:
        if r.get("op") == "p2p":
            what = f"{r['us']:.2f} us" if "us" in r else f"{r.get('gbps', 0):.1f} GB/s"
            print(f"p2p {r['impl']:16s} W={r['world_size']} mps={r['mps']} bytes={r['bytes']:>10}: {what}")


if __name__ == "__main__":
    main(sys.argv[1:])
