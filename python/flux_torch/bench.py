"""python -m flux_torch.bench <suite> — flux_torch's benchmarks, JSON lines as flux-bench writes them.

Suites:
  tp-mlp  the TPMLP block (column-parallel up, GELU, row-parallel down; sequence parallel), forward and
          forward+backward, side by side in one run:
            flux            flux_torch.TPMLP (AG+GEMM / GEMM+RS fused);
            torch_async_tp  PyTorch's async TP: torch.ops.symm_mem.fused_all_gather_matmul /
                            fused_matmul_reduce_scatter (NVLink multicast off), same autograd structure;
            nccl            all_gather_into_tensor + matmul, matmul + reduce_scatter_tensor (torch's NCCL).
          With one GPU per rank (NCCL group) every impl is timed and checked against flux. With ranks
          sharing a GPU (W > 1 on one GPU: gloo group, run it under `flux-run --mps`) only correctness is
          checked (rows with "check" and median_ms null): NCCL refuses two ranks on one GPU.
  ops     torch.ops.flux.gemm / gemm_rs / ag_gemm (the op layer's cost over the C++ plan: compare with
          flux-bench gemm / gemm-rs / ag-gemm on the same --shapes at W = 1; flux-bench's input distribution).
          median_ms: calls queued back to back with the host ahead (a GPU sleep first), a pair of CUDA
            events around each call: flux-bench gemm-rs / ag-gemm's method (tools::time_interleaved), so
            the two are comparable; the op alternates with its "plan" row: the same plan call into a
            preallocated output from pybind (flux_torch._C.run_into: no dispatcher, no allocation), so
            op_over_plan is the op layer's cost on the GPU's clock, in one process and one queue;
          median_ms_single: one call at a time on an idle GPU (includes the host's launch gap);
          host_us_per_call: the enqueue cost of one call.
Timing: CUDA events around each call after --warmup calls, inputs rotated through enough copies to
exceed 2 x L2, median of --iters. Start W ranks with torchrun or flux-run (RANK, WORLD_SIZE,
LOCAL_RANK); with neither, it runs as one rank.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

import flux_torch

L2_BYTES = 50 * 1024 * 1024  # H100/H200 L2: 50 MB; rotation covers twice this


def _init():
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", str(rank)))
    ndev = torch.cuda.device_count()
    if ndev == 0:
        sys.exit("flux_torch.bench: no CUDA device; the benchmark needs an NVIDIA Hopper GPU (sm_90)")
    torch.cuda.set_device(local % ndev)
    shared_gpu = world > ndev
    backend = "gloo" if shared_gpu else "nccl"
    if "TORCHELASTIC_RUN_ID" in os.environ or ("MASTER_PORT" in os.environ and "FLUX_RDZV_TOKEN" not in os.environ):
        dist.init_process_group(backend)  # torchrun (env://)
    else:
        # Alone, or under flux-run (whose MASTER_PORT socket is Flux's own rendezvous, handed to rank 0):
        # a file store, named after the launcher's pid, which every rank shares.
        path = os.environ.get("FLUX_TORCH_BENCH_STORE") or os.path.join(
            tempfile.gettempdir(), f"flux_torch_bench_{os.getppid() if world > 1 else os.getpid()}")
        dist.init_process_group(backend, init_method=f"file://{path}", rank=rank, world_size=world)
    return rank, world, shared_gpu


def _timed(fn, iters, warmup):
    for i in range(warmup):
        fn(i)
    times = []
    for i in range(iters):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(i)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def _timed_queued(fns, iters, warmup):
    """Events around each call, `iters` rounds of one call of each of `fns` queued back to back behind a
    GPU sleep (the host gets ahead): flux-bench's tools::time_interleaved, whose rounds are queued without
    a sync between calls. The median per fn."""
    for i in range(warmup):
        for fn in fns:
            fn(i)
    torch.cuda.synchronize()
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
              for _ in fns]
    torch.cuda._sleep(2_000_000)  # ~1 ms at H200 clocks: longer than the host needs to queue the first calls
    for i in range(iters):
        for fn, ev in zip(fns, events):
            ev[i][0].record()
            fn(warmup + i)
            ev[i][1].record()
    torch.cuda.synchronize()
    return [statistics.median(start.elapsed_time(stop) for start, stop in ev) for ev in events]


def _host_us(fn, calls=20):
    """The host's enqueue cost of one call (the GPU still busy with the previous ones), in microseconds."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(calls):
        fn(i)
    us = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    return us


def _copies(nbytes):
    return max(2, min(64, -(-2 * L2_BYTES // max(nbytes, 1))))


# ---- torch's async TP and the NCCL path, with the same autograd structure as flux_torch's layers ----
class _Col(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, impl, group_name):
        gathered, y = _ag(x, w.t(), impl, group_name)
        y = y + b
        ctx.save_for_backward(gathered, w)
        ctx.impl, ctx.group_name = impl, group_name
        return y

    @staticmethod
    def backward(ctx, dy):
        gathered, w = ctx.saved_tensors
        dx = _rs(dy.contiguous(), w, ctx.impl, ctx.group_name)
        return dx, dy.t().matmul(gathered), dy.sum(0), None, None


def _ag(a, b_kn, impl, group_name):
    """(all_gather(a), all_gather(a) @ b_kn) by torch async-TP or NCCL + matmul."""
    if impl == "torch_async_tp":
        gathered, (y,) = torch.ops.symm_mem.fused_all_gather_matmul(a, [b_kn], gather_dim=0, group_name=group_name)
        return gathered, y
    group = dist.distributed_c10d._resolve_process_group(group_name)
    gathered = a.new_empty(a.shape[0] * dist.get_world_size(group), a.shape[1])
    dist.all_gather_into_tensor(gathered, a, group=group)
    return gathered, gathered.matmul(b_kn)


def _rs(a, b_kn, impl, group_name):
    """reduce_scatter(a @ b_kn) by torch async-TP or matmul + NCCL."""
    group = dist.distributed_c10d._resolve_process_group(group_name)
    if impl == "torch_async_tp":
        return torch.ops.symm_mem.fused_matmul_reduce_scatter(a, b_kn, "sum", scatter_dim=0, group_name=group_name)
    partial = a.matmul(b_kn)
    out = partial.new_empty(partial.shape[0] // dist.get_world_size(group), partial.shape[1])
    dist.reduce_scatter_tensor(out, partial, group=group)
    return out


class _Row(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, impl, group_name):
        y = _rs(x, w.t(), impl, group_name) + b
        ctx.save_for_backward(x, w)
        ctx.impl, ctx.group_name = impl, group_name
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        dy_full, dx = _ag(dy.contiguous(), w, ctx.impl, ctx.group_name)
        return dx, dy_full.t().matmul(x), dy_full.sum(0), None, None


def _baseline_mlp(mlp, impl):
    name = mlp.up.group_name

    def run(x):
        h = _Col.apply(x, mlp.up.weight, mlp.up.bias, impl, name)
        return _Row.apply(F.gelu(h, approximate="tanh"), mlp.down.weight, mlp.down.bias, impl, name)
    return run


def _rel(a, b):
    return ((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30)).item()


def suite_tp_mlp(args, rank, world, shared_gpu, emit):
    if not shared_gpu:
        os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
        try:
            from torch.distributed._symmetric_memory import enable_symm_mem_for_group
            enable_symm_mem_for_group(dist.group.WORLD.group_name)
            symm_error = None
        except Exception as e:  # noqa: BLE001 - reported in the rows
            symm_error = f"enable_symm_mem_for_group: {e}"
    for dtype_name in args.dtypes.split(","):
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
        for m in [int(v) for v in args.m.split(",")]:
            torch.manual_seed(0)
            mlp = flux_torch.TPMLP(args.hidden, args.ffn, device="cuda", dtype=dtype)
            rows = m // world
            xs = [torch.randn(rows, args.hidden, device="cuda", dtype=dtype)
                  for _ in range(_copies(rows * args.hidden * 2))]
            dys = [torch.randn(rows, args.hidden, device="cuda", dtype=dtype) for _ in range(len(xs))]
            for p in mlp.parameters():
                p.requires_grad_(True)
            impls = {"flux": mlp}
            if not shared_gpu:
                impls["torch_async_tp"] = _baseline_mlp(mlp, "torch_async_tp")
                impls["nccl"] = _baseline_mlp(mlp, "nccl")
            with torch.no_grad():
                ref = mlp(xs[0])
            flops_fwd = 2.0 * m * args.hidden * args.ffn * 2 / world
            for impl, fn in impls.items():
                base = dict(op="tp_mlp", impl=impl, dtype=dtype_name, m=m, n=args.hidden, k=args.ffn,
                            hidden=args.hidden, ffn=args.ffn, world_size=world, same_gpu=shared_gpu)
                try:
                    if impl == "torch_async_tp" and symm_error:
                        raise RuntimeError(symm_error)
                    with torch.no_grad():
                        err = _rel(fn(xs[0]), ref)
                    if shared_gpu:
                        emit(dict(base, pass_="forward", median_ms=None, max_rel_err=err, check="repeat: the same output twice (bitwise)"))
                        continue

                    def fwd(i, fn=fn):
                        with torch.no_grad():
                            fn(xs[i % len(xs)])

                    def fwd_bwd(i, fn=fn):
                        x = xs[i % len(xs)].requires_grad_(True)
                        fn(x).backward(dys[i % len(dys)])
                        x.requires_grad_(False)

                    for pass_name, body, flops in (("forward", fwd, flops_fwd), ("forward_backward", fwd_bwd,
                                                                                  3 * flops_fwd)):
                        ms = _timed(body, args.iters, args.warmup)
                        emit(dict(base, **{"pass": pass_name}, median_ms=ms, tflops=flops / ms / 1e9,
                                  max_rel_err=err))
                except Exception as e:  # noqa: BLE001 - a failing impl is a row, not a stop
                    emit(dict(base, median_ms=None, error=str(e)[:300]))
    if shared_gpu:
        _check_shared_gpu(args, rank, world, emit)


def _check_shared_gpu(args, rank, world, emit):
    # W ranks on one GPU: flux's MLP against a single-device reference on the gathered input.
    for dtype_name in args.dtypes.split(","):
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
        m = 128 * world
        torch.manual_seed(3)
        up = torch.nn.Linear(args.hidden, args.ffn, device="cuda", dtype=dtype)
        down = torch.nn.Linear(args.ffn, args.hidden, device="cuda", dtype=dtype)
        mlp = flux_torch.TPMLP.from_linears(up, down)
        x_full = torch.randn(m, args.hidden, device="cuda", dtype=dtype)
        rows = m // world
        with torch.no_grad():
            y = mlp(x_full[rank * rows:(rank + 1) * rows])
            ref = down.float()(F.gelu(up.float()(x_full.float()), approximate="tanh"))[rank * rows:(rank + 1) * rows]
        err = _rel(y, ref)
        tol = 1e-2 if dtype == torch.bfloat16 else 5e-3
        emit(dict(op="tp_mlp", impl="flux", dtype=dtype_name, m=m, n=args.hidden, k=args.ffn, hidden=args.hidden,
                  ffn=args.ffn, world_size=world, same_gpu=True, median_ms=None, max_rel_err=err,
                  check="vs fp32 single-device reference", ok=err < tol))


def suite_ops(args, rank, world, shared_gpu, emit):
    if args.stream == "side":  # a stream of its own, as flux-bench times on, instead of torch's default stream
        stream = torch.cuda.Stream()
        torch.cuda.set_stream(stream)
    name = flux_torch.group_name()
    for dtype_name in args.dtypes.split(","):
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
        for shape in args.shapes.split(","):
            m, n, k = (int(v) for v in shape.split("x"))
            for op in ("gemm", "gemm_rs", "ag_gemm"):
                if op in ("gemm", "gemm_rs"):  # flux-bench gemm / gemm-rs: A [M, K(/W)], B [N, K(/W)]
                    a_shape, b_shape = (m, k), (n, k)
                else:  # flux-bench ag-gemm: A shard [M/W, K], B [N/W, K]; shapes give N/W
                    a_shape, b_shape = (m // world, k), (n, k)
                # flux-bench's inputs: uniform in [-1, 1) (tensor-core power, so clocks, depend on the data)
                sets = [(torch.rand(*a_shape, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dtype),
                         torch.rand(*b_shape, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dtype))
                        for _ in range(_copies((a_shape[0] * a_shape[1] + b_shape[0] * b_shape[1]) * 2))]
                outs = torch.empty(m // world if op == "gemm_rs" else m, n, device="cuda", dtype=dtype)
                if op == "gemm":
                    fn = lambda i: torch.ops.flux.gemm(sets[i % len(sets)][0], sets[i % len(sets)][1], None,  # noqa
                                                       "nk")
                elif op == "gemm_rs":
                    fn = lambda i: torch.ops.flux.gemm_rs(sets[i % len(sets)][0], sets[i % len(sets)][1], None,  # noqa
                                                          name, "nk", "auto")
                else:
                    fn = lambda i: torch.ops.flux.ag_gemm(sets[i % len(sets)][0], sets[i % len(sets)][1], None,  # noqa
                                                          name, "nk", "auto", False)
                # The same plan call into a preallocated output, from pybind (no dispatcher, no allocation).
                plan = lambda i, op=op: flux_torch._C.run_into(op, sets[i % len(sets)][0], sets[i % len(sets)][1],  # noqa
                                                               None, outs, name, "nk", "auto")
                a, b = sets[0]
                out = fn(0)
                out = out[0] if isinstance(out, tuple) else out
                ref = a.float() @ b.float().t() if world == 1 else None
                err = _rel(out, ref) if ref is not None else None
                plan(0)
                plan_err = _rel(outs, ref) if ref is not None else None
                # flux-bench gemm-rs / ag-gemm's method, the op and the plan call alternating in one queue
                ms, plan_ms = _timed_queued([fn, plan], args.iters, args.warmup)
                single = _timed(fn, args.iters, 1)  # one call at a time, from an idle GPU
                host_us, plan_host_us = _host_us(fn), _host_us(plan)
                emit(dict(op=op, impl="plan", dtype=dtype_name, m=m, n=n, k=k, world_size=world, layout="nk",
                          stream=args.stream, median_ms=plan_ms, host_us_per_call=plan_host_us,
                          tflops=2.0 * m * n * k / plan_ms / 1e9, max_rel_err=plan_err, iters=args.iters))
                emit(dict(op=op, impl="flux_torch", dtype=dtype_name, m=m, n=n, k=k, world_size=world, layout="nk",
                          stream=args.stream, median_ms=ms, median_ms_single=single, host_us_per_call=host_us,
                          tflops=2.0 * m * n * k / ms / 1e9, max_rel_err=err, iters=args.iters,
                          op_over_plan=ms / plan_ms))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m flux_torch.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite", choices=["tp-mlp", "ops"])
    ap.add_argument("--json", help="append JSON lines here (rank 0)")
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--m", default="1024,4096,8192", help="tp-mlp: tokens in all (M)")
    ap.add_argument("--hidden", type=int, default=4096, help="tp-mlp: hidden size")
    ap.add_argument("--ffn", type=int, default=16384, help="tp-mlp: MLP inner size")
    ap.add_argument("--shapes", default="4096x12288x12288,8192x12288x6144,1024x12288x24576",
                    help="ops: MxNxK as flux-bench gemm-rs / ag-gemm take them")
    ap.add_argument("--stream", choices=["default", "side"], default="default",
                    help="ops: run on torch's current (default) stream or on a stream of its own")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args(argv)
    rank, world, shared_gpu = _init()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    gpu = torch.cuda.get_device_name()
    command = " ".join(["python -m flux_torch.bench"] + (argv if argv is not None else sys.argv[1:]))
    rows = []

    def emit(row):
        if "pass_" in row:
            row["pass"] = row.pop("pass_")
        row.update(gpu=gpu, date=date, command=command, torch=torch.__version__)
        rows.append(row)
        if rank == 0:
            print(json.dumps(row), flush=True)

    {"tp-mlp": suite_tp_mlp, "ops": suite_ops}[args.suite](args, rank, world, shared_gpu, emit)
    if rank == 0 and args.json:
        with open(args.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    dist.barrier()
    flux_torch.release(communicator=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
