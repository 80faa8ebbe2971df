"""One rank of the flux_torch GPU tests (tests/python/test_flux_torch_gpu.py starts W of them, all on
cuda:0, under `flux-run --mps`). Ranks join a gloo group through a FileStore; Flux's host collectives run
on that group's store. Every check compares against a reference computed here from every rank's inputs
(all ranks draw all inputs from one seed), in fp32 or fp64, with outputs' memory poisoned (NaN) first.
Exits non-zero with the failing check's message.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist

import flux_torch

TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3}


def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def check(name, out, ref, dtype, log):
    assert out.shape == ref.shape, f"{name}: shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
    assert torch.isfinite(out).all(), f"{name}: non-finite values (poisoned memory not overwritten?)"
    err = rel_err(out, ref)
    assert err < TOL[dtype], f"{name}: max rel err {err:.3e} >= {TOL[dtype]}"
    log.append(f"{name} {err:.2e}")


def poison(nbytes_list):
    # Fill blocks the caching allocator will hand out next with NaN, then free them.
    blocks = [torch.full((max(n // 2, 1),), float("nan"), device="cuda", dtype=torch.float16) for n in nbytes_list]
    del blocks


def rand(*shape, gen, dtype, scale=1.0):
    return (torch.randn(*shape, generator=gen, device="cuda", dtype=torch.float32) * scale).to(dtype)


def test_ops(rank, world, dtype, log):
    gen = torch.Generator(device="cuda").manual_seed(1234)
    m, n, k = 128 * world + 64 * world, 384, 320  # M not a multiple of the tile per rank
    for layout in ("nk", "kn"):
        # gemm (single rank)
        a = rand(m, k, gen=gen, dtype=dtype)
        b = rand(n, k, gen=gen, dtype=dtype)
        bias = rand(n, gen=gen, dtype=dtype)
        bl = b if layout == "nk" else b.t().contiguous()
        poison([m * n * 2])
        out = torch.ops.flux.gemm(a, bl, bias, layout)
        check(f"gemm {layout}", out, a.float() @ b.float().t() + bias.float(), dtype, log)
        # gemm_rs: every rank's A_s [m, k/W], B_s [n, k/W]
        As = [rand(m, k, gen=gen, dtype=dtype, scale=0.5) for _ in range(world)]
        Bs = [rand(n, k, gen=gen, dtype=dtype, scale=0.5) for _ in range(world)]
        full = sum(As[s].double() @ Bs[s].double().t() for s in range(world)) + bias.double()
        rows = m // world
        for path in ("auto", "fused", "sequential", "decomposed"):
            bl = Bs[rank] if layout == "nk" else Bs[rank].t().contiguous()
            poison([rows * n * 2])
            out = torch.ops.flux.gemm_rs(As[rank], bl, bias, flux_torch.group_name(), layout, path)
            check(f"gemm_rs {layout} {path}", out, full[rank * rows:(rank + 1) * rows], dtype, log)
        # ag_gemm: every rank's shard [m/W, k]; this rank's B_r [n/W, k]
        shards = [rand(rows, k, gen=gen, dtype=dtype) for _ in range(world)]
        nr = 96  # this rank's N / W
        Bcol = [rand(nr, k, gen=gen, dtype=dtype) for _ in range(world)]
        bias_r = rand(nr, gen=gen, dtype=dtype)
        gathered_ref = torch.cat(shards)
        ref = gathered_ref.double() @ Bcol[rank].double().t() + bias_r.double()
        for path in ("auto", "fused", "sequential", "decomposed"):
            bl = Bcol[rank] if layout == "nk" else Bcol[rank].t().contiguous()
            poison([m * nr * 2, m * k * 2])
            out, gathered = torch.ops.flux.ag_gemm(shards[rank], bl, bias_r, flux_torch.group_name(), layout, path, True)
            check(f"ag_gemm {layout} {path}", out, ref, dtype, log)
            assert torch.equal(gathered, gathered_ref), f"ag_gemm {layout} {path}: gathered A differs"
    torch.cuda.synchronize()
    flux_torch.check_status()
    # A bad input reaches the C++ checks and comes back as ValueError with the library's message.
    try:
        torch.ops.flux.gemm_rs(As[rank][:, :8], Bs[rank], None, flux_torch.group_name())
        raise AssertionError("gemm_rs accepted a wrong K")
    except ValueError as e:
        assert "gemm_rs" in str(e) and "expected" in str(e), str(e)
    try:
        torch.ops.flux.gemm(a.t(), b)
        raise AssertionError("gemm accepted a non-contiguous a")
    except ValueError as e:
        assert "not contiguous" in str(e), str(e)
    # The bench's plan call (flux_torch._C.run_into): the op's result into a given output, or the error.
    into = torch.full((rows, n), float("nan"), device="cuda", dtype=dtype)
    flux_torch._C.run_into("gemm_rs", As[rank], Bs[rank], bias, into, flux_torch.group_name(), "nk", "auto")
    check("run_into gemm_rs", into, full[rank * rows:(rank + 1) * rows], dtype, log)
    try:
        wrong = torch.empty(rows, n - 8, device="cuda", dtype=dtype)  # contiguous, 8 columns short
        flux_torch._C.run_into("gemm_rs", As[rank], Bs[rank], bias, wrong, flux_torch.group_name(), "nk", "auto")
        raise AssertionError("run_into accepted a wrong out")
    except ValueError as e:
        assert f"expected {rows} x {n}" in str(e), str(e)


def test_fp8_ops(rank, world, log):
    # gemm_rs_fp8 and ag_gemm_fp8: e4m3 inputs (drawn so that rounding to e4m3 is exercised), scales not 1, per
    # tensor and per row / column, both out dtypes, bias, every path; against fp64 from the dequantized inputs.
    gen = torch.Generator(device="cuda").manual_seed(4321)
    e4m3 = torch.float8_e4m3fn

    def q(*shape, scale):
        return ((torch.rand(*shape, generator=gen, device="cuda") * 2 - 1) * scale).to(e4m3)

    def scales(count, lo, hi):
        return torch.rand(count, generator=gen, device="cuda") * (hi - lo) + lo

    def scaled(a, b, sa, sb):
        return (a.double() @ b.double().t()) * sa.double().reshape(-1, 1) * sb.double().reshape(1, -1)

    rows, k, n, nr = 136, 256, 264, 96  # rows per rank (M / W), K, GEMM+RS's N, AG+GEMM's N / W
    m = rows * world
    for per_row in (False, True):
        for out_dtype in (torch.bfloat16, torch.float16):
            kind = f"{'per-row' if per_row else 'per-tensor'} {str(out_dtype)[6:]}"
            As = [q(m, k, scale=4) for _ in range(world)]
            Bs = [q(n, k, scale=1) for _ in range(world)]
            sas = [scales(m if per_row else 1, 0.5, 2.0) for _ in range(world)]
            sbs = [scales(n if per_row else 1, 0.01, 0.03) for _ in range(world)]
            bias = (torch.rand(n, generator=gen, device="cuda") * 2 - 1).to(out_dtype)
            full = sum(scaled(As[s], Bs[s], sas[s], sbs[s]) for s in range(world)) + bias.double()
            for path in ("auto", "fused", "sequential", "decomposed"):
                poison([rows * n * 2])
                out = flux_torch.gemm_rs_fp8(As[rank], Bs[rank], sas[rank], sbs[rank], bias, out_dtype=out_dtype,
                                             path=path)
                assert out.dtype == out_dtype
                check(f"gemm_rs_fp8 {kind} {path}", out, full[rank * rows:(rank + 1) * rows], out_dtype, log)
            shards = [q(rows, k, scale=4) for _ in range(world)]
            common = scales(1, 0.5, 2.0)  # per tensor: the whole gathered a's scale, the same on every rank
            sa_shards = [scales(rows, 0.5, 2.0) for _ in range(world)] if per_row else [common] * world
            Bc = [q(nr, k, scale=1) for _ in range(world)]
            sb_c = [scales(nr if per_row else 1, 0.01, 0.03) for _ in range(world)]
            bias_r = (torch.rand(nr, generator=gen, device="cuda") * 2 - 1).to(out_dtype)
            gathered_ref = torch.cat(shards)
            sa_full = torch.cat(sa_shards) if per_row else common
            ref = scaled(gathered_ref, Bc[rank], sa_full, sb_c[rank]) + bias_r.double()
            for path in ("auto", "fused", "sequential", "decomposed"):
                poison([m * nr * 2, m * k])
                out, gathered, gathered_scale = flux_torch.ag_gemm_fp8(
                    shards[rank], Bc[rank], sa_shards[rank], sb_c[rank], bias_r, out_dtype=out_dtype, path=path,
                    return_gathered=True)
                check(f"ag_gemm_fp8 {kind} {path}", out, ref, out_dtype, log)
                assert gathered.dtype == e4m3 and torch.equal(gathered.view(torch.uint8), gathered_ref.view(torch.uint8)), \
                    f"ag_gemm_fp8 {kind} {path}: gathered a differs"
                if per_row:
                    assert torch.equal(gathered_scale, sa_full), f"ag_gemm_fp8 {kind} {path}: gathered scale_a differs"
                else:
                    assert gathered_scale.numel() == 0, f"ag_gemm_fp8 {kind} {path}: a per-tensor gathered scale"
    torch.cuda.synchronize()
    flux_torch.check_status()


def make_mlp(world, rank, dtype, hidden=256, ffn=1024, seed=7):
    torch.manual_seed(seed)
    up = torch.nn.Linear(hidden, ffn, device="cuda", dtype=torch.float32)
    down = torch.nn.Linear(ffn, hidden, device="cuda", dtype=torch.float32)
    mlp = flux_torch.TPMLP.from_linears(up.to(dtype), down.to(dtype))
    return mlp, up, down


def reference_mlp(up, down, x_full, dtype):
    # Single-device reference in fp32 on the gathered input, from the same (dtype-rounded) weights.
    up32 = torch.nn.Linear(up.in_features, up.out_features, device="cuda")
    down32 = torch.nn.Linear(down.in_features, down.out_features, device="cuda")
    with torch.no_grad():
        for dst, src in ((up32, up), (down32, down)):
            dst.weight.copy_(src.weight.to(dtype).float())
            dst.bias.copy_(src.bias.to(dtype).float())
    x = x_full.detach().float().requires_grad_(True)
    y = down32(torch.nn.functional.gelu(up32(x), approximate="tanh"))
    return x, y, up32, down32


def test_layers(rank, world, dtype, log):
    hidden, ffn, m = 256, 1024, 64 * world
    mlp, up, down = make_mlp(world, rank, dtype, hidden, ffn)
    gen = torch.Generator(device="cuda").manual_seed(99)
    x_full = rand(m, hidden, gen=gen, dtype=dtype)
    dy_full = rand(m, hidden, gen=gen, dtype=dtype)
    rows = m // world
    x = x_full[rank * rows:(rank + 1) * rows].clone().requires_grad_(True)
    poison([m * ffn * 2, m * hidden * 2])
    y = mlp(x)
    y.backward(dy_full[rank * rows:(rank + 1) * rows])
    xr, yr, up32, down32 = reference_mlp(up, down, x_full, dtype)
    yr.backward(dy_full.float())
    sl = slice(rank * rows, (rank + 1) * rows)
    fs = slice(rank * ffn // world, (rank + 1) * ffn // world)
    check("mlp out", y, yr[sl], dtype, log)
    check("mlp dx", x.grad, xr.grad[sl], dtype, log)
    check("up dW", mlp.up.weight.grad, up32.weight.grad[fs], dtype, log)
    check("up db", mlp.up.bias.grad, up32.bias.grad[fs], dtype, log)
    check("down dW", mlp.down.weight.grad, down32.weight.grad[:, fs], dtype, log)
    check("down db", mlp.down.bias.grad, down32.bias.grad, dtype, log)
    return mlp, up, down


def test_graph_and_compile(rank, world, dtype, log):
    hidden, ffn, m = 256, 1024, 64 * world
    mlp, up, down = make_mlp(world, rank, dtype, hidden, ffn)
    rows = m // world
    static_x = torch.empty(rows, hidden, device="cuda", dtype=dtype)
    gen = torch.Generator(device="cuda").manual_seed(5)
    with torch.no_grad():
        static_x.copy_(rand(rows, hidden, gen=gen, dtype=dtype))
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            mlp(static_x)  # eager warm-up: builds the plans
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_y = mlp(static_x)
        for step in range(4):  # changing inputs, rewritten in place between replays
            x_full = rand(m, hidden, gen=gen, dtype=dtype)
            static_x.copy_(x_full[rank * rows:(rank + 1) * rows])
            static_y.fill_(float("nan"))
            graph.replay()
            _, yr, _, _ = reference_mlp(up, down, x_full, dtype)
            check(f"graph replay {step}", static_y, yr[rank * rows:(rank + 1) * rows], dtype, log)
    # torch.compile of the block (inductor where it can run, fullgraph: no graph break allowed).
    backend = "inductor"
    try:
        import triton  # noqa: F401
    except ImportError:
        backend = "aot_eager"
    torch._dynamo.reset()
    compiled = torch.compile(mlp, fullgraph=True, backend=backend)
    x_full = rand(m, hidden, gen=gen, dtype=dtype)
    x = x_full[rank * rows:(rank + 1) * rows].clone().requires_grad_(True)
    y = compiled(x)
    y.float().sum().backward()
    xr, yr, _, _ = reference_mlp(up, down, x_full, dtype)
    yr.sum().backward()
    check(f"compiled ({backend}) out", y, yr[rank * rows:(rank + 1) * rows], dtype, log)
    check(f"compiled ({backend}) dx", x.grad, xr.grad[rank * rows:(rank + 1) * rows], dtype, log)


def test_many_steps(rank, world, dtype, log, steps):
    mlp, _, _ = make_mlp(world, rank, dtype)
    gen = torch.Generator(device="cuda").manual_seed(11)
    rows = 64
    x = rand(rows, 256, gen=gen, dtype=dtype).requires_grad_(True)
    dy = rand(rows, 256, gen=gen, dtype=dtype)
    first = None
    for step in range(steps):
        mlp.zero_grad(set_to_none=True)
        x.grad = None
        y = mlp(x)
        y.backward(dy)
        now = (y.detach().clone(), x.grad.clone(), mlp.up.weight.grad.clone(), mlp.down.weight.grad.clone())
        if first is None:
            first = now
        else:
            for name, a, b in zip(("out", "dx", "up dW", "down dW"), now, first):
                assert torch.equal(a, b), f"step {step}: {name} drifted from step 0"
    torch.cuda.synchronize()
    flux_torch.check_status()
    log.append(f"{steps} forward/backward steps bitwise identical")


def test_eviction(rank, world, dtype, log):
    # A cache of one plan: alternating shapes evict (a collective release) and rebuild; results stay right.
    flux_torch.set_plan_cache_limit(1)
    gen = torch.Generator(device="cuda").manual_seed(21)
    m = 64 * world
    for step in range(4):
        n = 384 if step % 2 == 0 else 256
        As = [rand(m, 128, gen=gen, dtype=dtype) for _ in range(world)]
        Bs = [rand(n, 128, gen=gen, dtype=dtype) for _ in range(world)]
        full = sum(As[s].double() @ Bs[s].double().t() for s in range(world))
        out = torch.ops.flux.gemm_rs(As[rank], Bs[rank], None, flux_torch.group_name())
        check(f"evicting cache step {step}", out, full[rank * 64:(rank + 1) * 64], dtype, log)
        keys = flux_torch.cached_plans()  # (plans pinned by the graph test stay; the other shape's went)
        other = 256 if n == 384 else 384
        assert any(f"n={n} k=128" in k for k in keys) and not any(f"n={other} k=128" in k for k in keys), keys
    flux_torch.set_plan_cache_limit(32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--steps", type=int, default=500)
    args = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", init_method=f"file://{args.store}", rank=rank, world_size=world)
    log = []
    for dtype in (torch.bfloat16, torch.float16):
        test_ops(rank, world, dtype, log)
        test_layers(rank, world, dtype, log)
        test_graph_and_compile(rank, world, dtype, log)
    test_fp8_ops(rank, world, log)
    test_many_steps(rank, world, torch.bfloat16, log, args.steps)
    test_eviction(rank, world, torch.bfloat16, log)
    print(f"rank {rank}/{world} ok: " + "; ".join(log), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - reported, then a non-zero exit
        import traceback
        traceback.print_exc()
        print(f"rank {os.environ.get('RANK')} FAILED: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
