"""flux_torch on the CPU (no GPU needed; CI runs it): schemas, fake-tensor shape/dtype propagation,
argument errors with the library's messages, torch.compile on meta tensors with no graph break, and
the plan cache's keys. A world of 4 ranks comes from torch's "fake" process-group backend (one process).
"""
import pytest
import torch
import torch.distributed as dist
from torch._subclasses.fake_tensor import FakeTensorMode

import flux_torch
from flux_torch import _C

WORLD = 4


@pytest.fixture(scope="module", autouse=True)
def fake_world():
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", rank=1, world_size=WORLD, store=FakeStore())
    flux_torch.register_group()
    yield
    dist.destroy_process_group()


def group():
    return dist.group.WORLD.group_name


SCHEMAS = {
    "gemm": "flux::gemm(Tensor a, Tensor b, Tensor? bias=None, str layout=\"nk\") -> Tensor",
    "gemm_fp8": "flux::gemm_fp8(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None, "
                "ScalarType? out_dtype=None) -> Tensor",
    "gemm_rs": "flux::gemm_rs(Tensor a, Tensor b, Tensor? bias, str group_name, str layout=\"nk\", "
               "str path=\"auto\") -> Tensor",
    "ag_gemm": "flux::ag_gemm(Tensor a, Tensor b, Tensor? bias, str group_name, str layout=\"nk\", "
               "str path=\"auto\", bool return_gathered=False) -> (Tensor, Tensor)",
    "gemm_rs_fp8": "flux::gemm_rs_fp8(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias, str group_name, "
                   "ScalarType? out_dtype=None, str path=\"auto\") -> Tensor",
    "ag_gemm_fp8": "flux::ag_gemm_fp8(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias, str group_name, "
                   "ScalarType? out_dtype=None, str path=\"auto\", bool return_gathered=False) -> (Tensor, Tensor, Tensor)",
}


@pytest.mark.parametrize("op", sorted(SCHEMAS))
def test_ops_are_registered_with_their_schemas(op):
    assert str(getattr(torch.ops.flux, op).default._schema) == SCHEMAS[op]
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"flux::{op}", "CUDA")
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"flux::{op}", "Meta")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["nk", "kn"])
def test_fake_shapes_and_dtypes(dtype, layout):
    def weight(n, k):
        return torch.empty((n, k) if layout == "nk" else (k, n), dtype=dtype)

    with FakeTensorMode():
        a = torch.empty(96, 64, dtype=dtype)
        out = torch.ops.flux.gemm(a, weight(40, 64), None, layout)
        assert out.shape == (96, 40) and out.dtype == dtype
        out = torch.ops.flux.gemm_rs(a, weight(40, 64), torch.empty(40, dtype=dtype), group(), layout)
        assert out.shape == (96 // WORLD, 40) and out.dtype == dtype
        out, gathered = torch.ops.flux.ag_gemm(a, weight(24, 64), None, group(), layout, "auto", True)
        assert out.shape == (96 * WORLD, 24) and gathered.shape == (96 * WORLD, 64)
        assert out.dtype == dtype and gathered.dtype == dtype
        out, gathered = torch.ops.flux.ag_gemm(a, weight(24, 64), None, group(), layout)
        assert gathered.shape == (0, 64)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda a, b: torch.ops.flux.gemm(a, b[:, :32]), "expected K = 32 columns"),
        (lambda a, b: torch.ops.flux.gemm(a.float(), b), "expected bfloat16 or float16"),
        (lambda a, b: torch.ops.flux.gemm(a, b.half()), "expected a's dtype"),
        (lambda a, b: torch.ops.flux.gemm(a, b, torch.empty(7, dtype=a.dtype)), "expected (40,)"),
        (lambda a, b: torch.ops.flux.gemm(a, b, None, "xy"), "unknown weight layout 'xy'"),
        (lambda a, b: torch.ops.flux.gemm_rs(a[:90], b, None, group()), "expected a multiple of the group size 4"),
        (lambda a, b: torch.ops.flux.gemm_rs(a, b, None, group(), "nk", "bogus"), "flux gemm_rs: unknown implementation 'bogus'"),
        (lambda a, b: torch.ops.flux.ag_gemm(a, b, None, "no-such-group"), "is not registered with Flux"),
    ],
)
def test_fake_kernels_raise_the_library_errors(call, message):
    with FakeTensorMode():
        a = torch.empty(96, 64, dtype=torch.bfloat16)
        b = torch.empty(40, 64, dtype=torch.bfloat16)
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            call(a, b)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda a, b: torch.ops.flux.gemm(a, b), "flux gemm: a is on cpu; expected a CUDA tensor"),
        (lambda a, b: torch.ops.flux.gemm(a, b, None, "xy"), "flux: unknown weight layout 'xy'"),
        (lambda a, b: torch.ops.flux.gemm_rs(a, b, None, group(), "nk", "bogus"), "flux gemm_rs: unknown implementation 'bogus'"),
        (lambda a, b: torch.ops.flux.ag_gemm(a, b, None, group(), "nk", "pipelined"), "flux ag_gemm: unknown implementation 'pipelined'"),
        (lambda a, b: _C.run_into("gemm", a, b, None, a, "", "nk", "auto"), "flux gemm: a is on cpu; expected a CUDA tensor"),
        (lambda a, b: _C.run_into("gemv", a, b, None, a, "", "nk", "auto"), "run_into: unknown op 'gemv'"),
    ],
)
def test_real_kernels_raise_the_library_errors_as_value_errors(call, message):
    a = torch.randn(96, 64).bfloat16()
    b = torch.randn(40, 64).bfloat16()
    with pytest.raises(ValueError, match=message):
        call(a, b)


def test_fp8_fake_shapes_and_errors():
    e4m3 = torch.float8_e4m3fn
    with FakeTensorMode():
        a = torch.empty(96, 64, dtype=e4m3)
        b = torch.empty(40, 64, dtype=e4m3)
        one, rows, cols = (torch.empty(n, dtype=torch.float32) for n in (1, 96, 40))
        out = flux_torch.gemm_fp8(a, b, one, one)
        assert out.shape == (96, 40) and out.dtype == torch.bfloat16
        out = flux_torch.gemm_fp8(a, b, rows, cols, torch.empty(40, dtype=torch.float16), torch.float16)
        assert out.shape == (96, 40) and out.dtype == torch.float16
        for call, message in [
            (lambda: flux_torch.gemm_fp8(a.bfloat16(), b, one, one), "expected float8_e4m3fn"),
            (lambda: flux_torch.gemm_fp8(a, b[:, :32], one, one), "expected [N, K] with K = 64"),
            (lambda: flux_torch.gemm_fp8(a, b, rows, one), "expected 1 and 1 (per tensor) or M = 96 and N = 40"),
            (lambda: flux_torch.gemm_fp8(a, b, one, one, None, torch.float32), "expected bfloat16 or float16"),
            (lambda: flux_torch.gemm_fp8(a, b, one, one, torch.empty(40, dtype=torch.float16)), "expected (40,)"),
        ]:
            with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
                call()
    # The real kernel on CPU tensors: the library's error.
    a = torch.randn(96, 64).to(e4m3)
    with pytest.raises(ValueError, match="flux gemm_fp8: a is on cpu; expected a CUDA tensor"):
        flux_torch.gemm_fp8(a, a[:40], torch.ones(1), torch.ones(1))


def test_fp8_fused_ops_fake_shapes_and_errors():
    e4m3 = torch.float8_e4m3fn
    with FakeTensorMode():
        a = torch.empty(96, 64, dtype=e4m3)
        b = torch.empty(40, 64, dtype=e4m3)
        one, rows, cols = (torch.empty(n, dtype=torch.float32) for n in (1, 96, 40))
        out = flux_torch.gemm_rs_fp8(a, b, one, one)
        assert out.shape == (96 // WORLD, 40) and out.dtype == torch.bfloat16
        out = flux_torch.gemm_rs_fp8(a, b, rows, cols, torch.empty(40, dtype=torch.float16), out_dtype=torch.float16,
                                     path="decomposed")
        assert out.shape == (96 // WORLD, 40) and out.dtype == torch.float16
        out, gathered, gathered_scale = flux_torch.ag_gemm_fp8(a, b, rows, cols, return_gathered=True)
        assert out.shape == (96 * WORLD, 40) and out.dtype == torch.bfloat16
        assert gathered.shape == (96 * WORLD, 64) and gathered.dtype == e4m3
        assert gathered_scale.shape == (96 * WORLD,) and gathered_scale.dtype == torch.float32
        out, gathered, gathered_scale = flux_torch.ag_gemm_fp8(a, b, one, one, return_gathered=True)
        assert gathered.shape == (96 * WORLD, 64) and gathered_scale.shape == (0,)  # per tensor: scale_a is it
        _, gathered, gathered_scale = flux_torch.ag_gemm_fp8(a, b, rows, cols)
        assert gathered.shape == (0, 64) and gathered_scale.shape == (0,)
        for call, message in [
            (lambda: flux_torch.gemm_rs_fp8(a.bfloat16(), b, one, one), "flux gemm_rs_fp8: a is torch.bfloat16; expected float8_e4m3fn"),
            (lambda: flux_torch.gemm_rs_fp8(a[:90], b, one, one), "expected a multiple of the group size 4"),
            (lambda: flux_torch.gemm_rs_fp8(a, b, rows, one), "expected 1 and 1 (per tensor) or M = 96 and N = 40"),
            (lambda: flux_torch.gemm_rs_fp8(a, b, one, one, path="bogus"), "unknown implementation 'bogus'"),
            (lambda: flux_torch.ag_gemm_fp8(a, b[:, :32], one, one), "flux ag_gemm_fp8: b is 40 x 32; expected [N, K]"),
            (lambda: flux_torch.ag_gemm_fp8(a, b, one, one, torch.empty(40, dtype=torch.float16)), "expected (40,) torch.bfloat16"),
        ]:
            with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
                call()
    # The real kernels on CPU tensors: the library's error.
    a = torch.randn(96, 64).to(e4m3)
    with pytest.raises(ValueError, match="flux gemm_rs_fp8: a is on cpu; expected a CUDA tensor"):
        flux_torch.gemm_rs_fp8(a, a[:40], torch.ones(1), torch.ones(1))
    with pytest.raises(ValueError, match="flux ag_gemm_fp8: a is on cpu; expected a CUDA tensor"):
        flux_torch.ag_gemm_fp8(a, a[:40], torch.ones(1), torch.ones(1))


def test_compile_of_the_tp_mlp_on_meta_tensors_has_no_graph_break():
    torch._dynamo.reset()
    mlp = flux_torch.TPMLP(64, 256, device="meta", dtype=torch.bfloat16)
    x = torch.empty(32, 64, device="meta", dtype=torch.bfloat16, requires_grad=True)
    explanation = torch._dynamo.explain(mlp)(x)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1
    compiled = torch.compile(mlp, fullgraph=True, backend="aot_eager")
    y = compiled(x)
    assert y.shape == (32, 64) and y.device.type == "meta"
    y.sum().backward()  # AOTAutograd traced the backward (AG+GEMM / GEMM+RS in reverse) too
    assert x.grad.shape == x.shape
    assert mlp.up.weight.grad.shape == mlp.up.weight.shape
    assert mlp.down.bias.grad.shape == (64,)


def test_layers_shard_shapes():
    col = flux_torch.ColumnParallelLinear(64, 256, device="meta")
    row = flux_torch.RowParallelLinear(256, 64, device="meta")
    assert col.weight.shape == (256 // WORLD, 64) and col.bias.shape == (256 // WORLD,)
    assert row.weight.shape == (64, 256 // WORLD) and row.bias.shape == (64,)
    with pytest.raises(ValueError, match="not a multiple of the group size 4"):
        flux_torch.ColumnParallelLinear(64, 30, device="meta")
    with pytest.raises(ValueError, match="expected torch.bfloat16 or torch.float16"):
        flux_torch.RowParallelLinear(256, 64, device="meta", dtype=torch.float32)


def test_plan_cache_keys():
    key = _C.plan_key("gemm_rs", 4096, 1024, "bf16", "nk", "auto")
    assert key == "gemm_rs n=4096 k=1024 bf16 nk path=auto"
    others = {
        _C.plan_key("ag_gemm", 4096, 1024, "bf16", "nk", "auto"),
        _C.plan_key("gemm_rs", 4096, 1024, "fp16", "nk", "auto"),
        _C.plan_key("gemm_rs", 4096, 1024, "bf16", "kn", "auto"),
        _C.plan_key("gemm_rs", 4096, 1024, "bf16", "nk", "fused"),
        _C.plan_key("gemm_rs", 4096, 2048, "bf16", "nk", "auto"),
        _C.plan_key("gemm_rs", 2048, 1024, "bf16", "nk", "auto"),
    }
    assert key not in others and len(others) == 6
    # M is not in the key: a plan is built for the next power of two and serves every smaller M.
    assert [_C.plan_max_m(m) for m in (1, 2, 3, 128, 129, 4096, 5000)] == [1, 2, 4, 128, 256, 4096, 8192]
    with pytest.raises(ValueError, match="unknown dtype 'e5m2'"):
        _C.plan_key("gemm_rs", 1, 1, "e5m2", "nk", "auto")


def test_registered_group_and_cache_controls():
    assert flux_torch.group_name() == group()
    assert flux_torch.cached_plans() == []
    with pytest.raises(ValueError, match="expected >= 1"):
        flux_torch.set_plan_cache_limit(0)
    flux_torch.set_plan_cache_limit(8)


def test_store_exchange_timeout_names_the_missing_ranks():
    store = dist.HashStore()
    ex = flux_torch.distributed.StoreExchange(store, "t", rank=0, world=3, timeout_ms=50)
    store.set("t/0/2", b"label\0x")  # rank 2 arrived, rank 1 did not
    with pytest.raises(TimeoutError, match=r"rank\(s\) \[1\] did not reach 'label'"):
        ex.all_gather("label", b"mine")


def test_store_exchange_detects_different_collectives():
    store = dist.HashStore()
    ex = flux_torch.distributed.StoreExchange(store, "t", rank=0, world=2, timeout_ms=1000)
    store.set("t/0/1", b"other\0x")
    with pytest.raises(RuntimeError, match="rank 1 called 'other'"):
        ex.all_gather("mine", b"")
    ok = flux_torch.distributed.StoreExchange(store, "u", rank=0, world=2, timeout_ms=1000)
    store.set("u/0/1", b"same\0theirs")
    assert ok.all_gather("same", b"ours") == [b"ours", b"theirs"]


def test_plan_cache_policy():
    # The cache's LRU, rebuild-larger, pinning and capture rules, with builds and releases recorded.
    steps = [("A", 100, False), ("A", 64, False), ("B", 10, False), ("A", 200, False), ("C", 1, False),
             ("A", 100, True), ("D", 5, True), ("E", 5, False), ("A", 1000, False)]
    log = _C.plan_cache_trace(steps, 2)
    assert log[:8] == ["build A 128", "hit A", "build B 16", "release A", "build A 256", "build C 1", "release B",
                       "hit A pinned"]
    assert log[8].startswith("error flux_torch: no plan for D at M = 5 yet") and "CUDA-graph capture" in log[8]
    # E evicts C (least recent, not pinned); A, pinned by a capture, is kept (retired) when rebuilt larger.
    assert log[9:] == ["build E 8", "release C", "build A 1024", "cached A max_m=1024", "cached E max_m=8",
                       "release A", "release E", "release A"]


def test_plan_cache_never_evicts_the_plan_in_use():
    # Limit 1, A pinned by a capture: building B cannot evict A (pinned) nor B (in use); B is returned.
    log = _C.plan_cache_trace([("A", 8, False), ("A", 8, True), ("B", 8, False), ("B", 8, False)], 1)
    assert log == ["build A 8", "hit A pinned", "build B 8", "hit B", "cached B max_m=8", "cached A max_m=8",
                   "release B", "release A"]


def test_exchange_driven_from_cpp_releases_and_retakes_the_gil():
    # A one-rank group on a HashStore: the C++ communicator's collectives call back into Python.
    store = dist.HashStore()
    _C.register_group("selftest-1", 0, 1, flux_torch.distributed.StoreExchange(store, "x", 0, 1, timeout_ms=2000))
    assert _C.host_exchange_selftest("selftest-1", "payload") == ["payload"]
    assert _C.host_exchange_selftest("selftest-1", "again") == ["again"]  # later steps, old keys deleted
    assert not store.check(["x/0/0"]) and store.check(["x/3/0"])  # 2 steps per call: 0..3, step 2's key gone too
    with pytest.raises(ValueError, match="not registered with Flux"):
        _C.host_exchange_selftest("no-such-group", "x")


def test_exchange_timeout_is_the_library_knob(monkeypatch):
    monkeypatch.delenv("FLUX_RDZV_TIMEOUT_MS", raising=False)
    assert flux_torch.distributed._timeout_ms() == 120000  # the registered default (src/common/knobs.cpp)
    monkeypatch.setenv("FLUX_RDZV_TIMEOUT_MS", "250")
    assert flux_torch.distributed._timeout_ms() == 250
    monkeypatch.setenv("FLUX_RDZV_TIMEOUT_MS", "soon")
    with pytest.raises(ValueError, match="FLUX_RDZV_TIMEOUT_MS"):
        flux_torch.distributed._timeout_ms()
    monkeypatch.setenv("FLUX_RDZV_TIMEOUT_MS", "0")
    with pytest.raises(ValueError, match="expected > 0"):
        flux_torch.distributed._timeout_ms()
