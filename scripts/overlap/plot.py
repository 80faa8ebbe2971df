#!/usr/bin/env python3
"""Speedup over `sequential` against M, one line per (path, TP), one panel per op, from JSON lines of
flux-bench gemm-rs / ag-gemm (and torch_async_tp rows). usage: plot.py OUT.png FILE.jsonl [...]"""
import collections
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(out, paths):
    rows = [json.loads(line) for p in paths for line in open(p) if line.strip()]
    rows = [r for r in rows if r.get("op") in ("gemm_rs", "ag_gemm") and r.get("median_ms")]
    seq = {(r["op"], r["dtype"], r["m"], r["world_size"]): r["median_ms"] for r in rows if r["impl"] == "sequential"}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, op in zip(axes, ("gemm_rs", "ag_gemm")):
        lines = collections.defaultdict(list)
        for r in rows:
            if r["op"] != op or r["impl"] in ("sequential", "nccl_comm") or r["dtype"] != "bf16":
                continue
            base = seq.get((op, r["dtype"], r["m"], r["world_size"]))
            if base:
                where = " (ranks share 1 GPU)" if r.get("same_gpu") and r["world_size"] > 1 else ""
                lines[(r["impl"], r["world_size"], where)].append((r["m"], base / r["median_ms"]))
        for (impl, tp, where), pts in sorted(lines.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{impl} TP={tp}{where}")
        ax.axhline(1.0, color="gray", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("M (tokens)")
        ax.set_ylabel("speedup over sequential (bf16)")
        ax.set_title(op)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
