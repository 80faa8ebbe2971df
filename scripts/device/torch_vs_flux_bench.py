#!/usr/bin/env python3
"""Ratio of flux_torch's op times to flux-bench's for the same shapes (issue 11's bar: W = 1, the torch op
within 3% of flux-bench's fused time). Both files are JSON lines from one device call:
  python -m flux_torch.bench ops ... --json TORCH      (median_ms: back to back, host ahead, events per call;
                                                        op_over_plan: the op over its plan call in the same queue)
  flux-bench gemm-rs / ag-gemm ... --json FLUX         (impl "flux": the same method, tools::time_interleaved)
usage: torch_vs_flux_bench.py TORCH.jsonl FLUX.jsonl
"""
import json
import sys


def main():
    torch_rows = [json.loads(line) for line in open(sys.argv[1])]
    flux = {}
    for line in open(sys.argv[2]):
        r = json.loads(line)
        if r.get("impl") == "flux":
            flux[(r["op"], r["dtype"], r["m"], r["n"], r["k"])] = r["median_ms"]
    worst = 0.0
    worst_plan = 0.0
    print(f"{'op':8} {'stream':7} {'dtype':5} {'shape':20} {'torch_ms':>9} {'flux_ms':>9} {'ratio':>6} {'op/plan':>7}")
    for r in torch_rows:
        key = (r["op"], r["dtype"], r["m"], r["n"], r["k"])
        if r["op"] == "gemm" or r.get("impl") != "flux_torch" or key not in flux:
            continue
        ratio = r["median_ms"] / flux[key]
        worst = max(worst, ratio)
        over = r.get("op_over_plan")
        worst_plan = max(worst_plan, over or 0.0)
        print(f"{r['op']:8} {r.get('stream', ''):7} {r['dtype']:5} {r['m']}x{r['n']}x{r['k']:<10} "
              f"{r['median_ms']:9.4f} {flux[key]:9.4f} {ratio:6.3f} {over if over is None else round(over, 3)!s:>7}")
    print(f"worst torch / flux-bench (two programs): {worst:.3f}; worst op / plan call (one process, one queue): "
          f"{worst_plan:.3f} (bar: <= 1.03)")


if __name__ == "__main__":
    main()
