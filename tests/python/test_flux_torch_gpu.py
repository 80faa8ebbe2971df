"""flux_torch on the H200 (skips with a message without an sm_90 GPU): W in {1, 2, 4} processes on one
GPU, a gloo group per job, under MPS (`flux-run --mps`, found at $FLUX_RUN or build/tools/flux-run).
Each rank runs tests/python/gpu_worker.py: every op and path against a reference from every rank's
inputs, both layouts, both dtypes, the FP8 fused ops (per-tensor and per-row scales, both out dtypes); the TP MLP's forward and backward (output and all gradients) against
a single-device nn.Linear reference; CUDA-graph capture and replay with changing inputs; torch.compile
(fullgraph) of the block; 500 forward/backward steps, bitwise identical.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("gpu_worker.py")


def _skip_reason():
    if not torch.cuda.is_available():
        return "no CUDA device: the flux_torch GPU tests need an NVIDIA Hopper GPU (sm_90)"
    if torch.cuda.get_device_capability() != (9, 0):
        return f"{torch.cuda.get_device_name()} is sm_{''.join(map(str, torch.cuda.get_device_capability()))}; the " \
               "flux_torch GPU tests need sm_90"
    return None


def _flux_run():
    path = os.environ.get("FLUX_RUN") or str(ROOT / os.environ.get("FLUX_BUILD_DIR", "build") / "tools" / "flux-run")
    return path if os.path.exists(path) else None


@pytest.mark.parametrize("world", [1, 2, 4])
def test_flux_torch_on_one_gpu(world):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    launcher = _flux_run()
    if launcher is None:
        pytest.skip("flux-run was not built (scripts/build.sh builds build/tools/flux-run; or set FLUX_RUN): "
                    "ranks sharing one GPU need its MPS daemon")
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        cmd = [launcher, "-n", str(world), "--mps", "--timeout", "900", "--", sys.executable, str(WORKER),
               "--store", store, "--steps", os.environ.get("FLUX_TORCH_TEST_STEPS", "500")]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""),) if p)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1000)
    sys.stdout.write(proc.stdout[-20000:])
    sys.stderr.write(proc.stderr[-20000:])
    assert proc.returncode == 0, f"W = {world}: exit {proc.returncode}\n{proc.stderr[-4000:]}"
    for r in range(world):
        assert f"rank {r}/{world} ok" in proc.stdout, f"rank {r} did not report success"


@pytest.mark.parametrize("per_row", [False, True])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16])
def test_gemm_fp8_against_the_dequantized_reference(per_row, out_dtype):
    """flux_torch.gemm_fp8 in this process: e4m3 inputs (drawn so that rounding to e4m3 is exercised), scales
    not 1, bias; every element finite and the whole against an fp64 reference from the dequantized inputs."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    import flux_torch

    g = torch.Generator(device="cuda").manual_seed(7)
    for m, n, k in ((1, 1544, 1024), (127, 2056, 512), (1000, 1032, 2048)):
        a = (torch.rand(m, k, device="cuda", generator=g) * 8 - 4).to(torch.float8_e4m3fn)
        b = (torch.rand(n, k, device="cuda", generator=g) * 2 - 1).to(torch.float8_e4m3fn)
        sa = torch.rand(m if per_row else 1, device="cuda", generator=g) * 1.5 + 0.5
        sb = torch.rand(n if per_row else 1, device="cuda", generator=g) * 0.02 + 0.01
        bias = (torch.rand(n, device="cuda", generator=g) * 2 - 1).to(out_dtype)
        out = flux_torch.gemm_fp8(a, b, sa, sb, bias, out_dtype)
        ref = (a.double() @ b.double().T) * sa.double().reshape(-1, 1) * sb.double().reshape(1, -1) + bias.double()
        assert out.dtype == out_dtype and out.shape == (m, n)
        assert torch.isfinite(out).all()
        rel = ((out.double() - ref).norm() / ref.norm()).item()
        assert rel < (1e-2 if out_dtype == torch.bfloat16 else 5e-3), (m, n, k, per_row, rel)
