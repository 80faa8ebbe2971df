#!/usr/bin/env python3
"""torch async-TP on the same shapes as flux-bench gemm-rs / ag-gemm, and NCCL bus bandwidth.

Run as W ranks with one GPU per rank: flux-run -n W -- python3 scripts/overlap/torch_async_tp.py --json FILE
(flux-run sets torchrun's variables). Rows (rank 0 writes them), one per (op, impl, dtype, m, n, k, world_size):
  op ag_gemm / gemm_rs, impl torch_async_tp: torch.ops.symm_mem.fused_all_gather_matmul /
      fused_matmul_reduce_scatter (CUDA events, rotating inputs, median of --iters after warm-up);
  op nccl, impl nccl_all_gather / nccl_reduce_scatter: busbw in GB/s for the same bytes (torch's NCCL).
Shapes: full layer (M, N, K) as in DESIGN.md; AG: A_shard [M/W, K], B [N/W, K]; RS: A [M, K/W], B [N, K/W].
A failing op writes a row with "error" and median_ms null instead of stopping the script.
"""
import argparse
import datetime
import json
import os
import statistics
import sys

import torch
import torch.distributed as dist


def timed(fn, iters, warmup):
    for _ in range(warmup):
        fn(0)
    times = []
    for i in range(iters):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(i)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--m", default="1024,2048,4096,8192,16384")
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count())
    dist.init_process_group("nccl")
    group = dist.group.WORLD
    rows = []
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    gpu = torch.cuda.get_device_name()
    command = " ".join([sys.executable] + sys.argv)
    try:
        from torch.distributed._symmetric_memory import enable_symm_mem_for_group
        enable_symm_mem_for_group(group.group_name)
        symm_error = None
    except Exception as e:  # noqa: BLE001 - recorded in the rows
        symm_error = f"enable_symm_mem_for_group: {e}"

    def row(op, impl, dtype, m, n, k, ms, **extra):
        r = {"op": op, "impl": impl, "dtype": dtype, "m": m, "n": n, "k": k, "world_size": world, "median_ms": ms,
             "tflops": None, "max_rel_err": None, "gpu": gpu, "date": date, "command": command}
        r.update(extra)
        rows.append(r)

    for dtype_name in args.dtypes.split(","):
        dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float16
        for m in [int(x) for x in args.m.split(",")]:
            # AG+GEMM: M x 49152 x 12288; GEMM+RS: M x 12288 x 49152 (full layer).
            for op, n, k in (("ag_gemm", 49152, 12288), ("gemm_rs", 12288, 49152)):
                flops = 2.0 * m * (n // world if op == "ag_gemm" else n) * (k if op == "ag_gemm" else k // world)
                sets = []
                for _ in range(2):
                    if op == "ag_gemm":
                        a = torch.randn(m // world, k, device="cuda", dtype=dtype)
                        b = torch.randn(n // world, k, device="cuda", dtype=dtype)
                    else:
                        a = torch.randn(m, k // world, device="cuda", dtype=dtype)
                        b = torch.randn(n, k // world, device="cuda", dtype=dtype)
                    sets.append((a, b))
                try:
                    if symm_error:
                        raise RuntimeError(symm_error)
                    if op == "ag_gemm":
                        fn = lambda i: torch.ops.symm_mem.fused_all_gather_matmul(  # noqa: E731
                            sets[i % 2][0], [sets[i % 2][1].t()], gather_dim=0, group_name=group.group_name)
                    else:
                        fn = lambda i: torch.ops.symm_mem.fused_matmul_reduce_scatter(  # noqa: E731
                            sets[i % 2][0], sets[i % 2][1].t(), "sum", scatter_dim=0, group_name=group.group_name)
                    ms = timed(fn, args.iters, args.warmup)
                    row(op, "torch_async_tp", dtype_name, m, n, k, ms, tflops=flops / ms / 1e9)
                except Exception as e:  # noqa: BLE001
                    row(op, "torch_async_tp", dtype_name, m, n, k, None, error=str(e)[:300])
                # NCCL alone on the same bytes: the gathered A for AG, the partial C for RS.
                try:
                    if op == "ag_gemm":
                        send = sets[0][0]
                        recv = torch.empty(m, k, device="cuda", dtype=dtype)
                        fn = lambda i: dist.all_gather_into_tensor(recv, send)  # noqa: E731
                        total = recv.numel() * recv.element_size()
                        impl = "nccl_all_gather"
                    else:
                        send = torch.randn(m, n, device="cuda", dtype=dtype)
                        recv = torch.empty(m // world, n, device="cuda", dtype=dtype)
                        fn = lambda i: dist.reduce_scatter_tensor(recv, send)  # noqa: E731
                        total = send.numel() * send.element_size()
                        impl = "nccl_reduce_scatter"
                    ms = timed(fn, args.iters, args.warmup)
                    busbw = total / (ms * 1e-3) / 1e9 * (world - 1) / world
                    row("nccl", impl, dtype_name, m, n, k, ms, bytes=total, busbw_gbps=busbw)
                except Exception as e:  # noqa: BLE001
                    row("nccl", "nccl_all_gather" if op == "ag_gemm" else "nccl_reduce_scatter", dtype_name, m, n, k,
                        None, error=str(e)[:300])
    if rank == 0:
        with open(args.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        for r in rows:
            print(r["op"], r["impl"], r["dtype"], r["m"], r["median_ms"], r.get("error", ""))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
