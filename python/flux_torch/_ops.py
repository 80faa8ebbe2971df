"""torch.ops.flux.*: fake (meta) kernels and the Python entry points.

The CUDA kernels are registered by the extension (python/csrc/flux_torch.cpp), with these schemas:

  flux::gemm(Tensor a, Tensor b, Tensor? bias=None, str layout="nk") -> Tensor
  flux::gemm_fp8(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None,
                 ScalarType? out_dtype=None) -> Tensor
  flux::gemm_rs(Tensor a, Tensor b, Tensor? bias, str group_name, str layout="nk", str path="auto") -> Tensor
  flux::ag_gemm(Tensor a, Tensor b, Tensor? bias, str group_name, str layout="nk", str path="auto",
                bool return_gathered=False) -> (Tensor, Tensor)
  flux::gemm_rs_fp8(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias, str group_name,
                    ScalarType? out_dtype=None, str path="auto") -> Tensor
  flux::ag_gemm_fp8(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias, str group_name,
                    ScalarType? out_dtype=None, str path="auto", bool return_gathered=False) -> (Tensor, Tensor, Tensor)

Layouts: "nk" = B is [N, K] (torch.nn.Linear's weight), "kn" = B is [K, N]. W = the group's size.
  gemm      a [M, K]                      -> out [M, N]      = a B^T (+ bias [N])
  gemm_fp8  a [M, K], B [N, K] float8_e4m3fn, scale_a / scale_b float32 ([1] and [1]: per tensor; [M] and
            [N]: per row of a and column of B) -> out [M, N] out_dtype (bfloat16 default, or float16)
                                                              = (a B^T) * sa * sb (+ bias [N], out_dtype)
  gemm_rs   a [M, K/W], B_r [N, K/W]      -> out [M/W, N]    = rows of sum_s a_s B_s^T for this rank (+ bias once)
  ag_gemm   a [M/W, K], B_r [N/W, K]      -> out [M, N/W]    = all_gather(a) B_r^T (+ bias [N/W]),
                                             gathered [M, K] (or [0, K] unless return_gathered)
  gemm_rs_fp8 / ag_gemm_fp8: the same in FP8 (a and B float8_e4m3fn, B as [N, K]; scales and out_dtype as
            gemm_fp8, scale_a over a's rows: GEMM+RS [M], AG+GEMM this rank's [M/W], or one per tensor, which
            for AG+GEMM is the whole gathered a's and the same on every rank); ag_gemm_fp8 also returns the
            gathered row scales [M] (per row and return_gathered; else [0])
The fake kernels check what the real ones check that can be known from shapes alone, with the same
messages, so torch.compile and FakeTensor tracing fail the same way eager calls do.
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch

from . import distributed as _dist

_DTYPES = (torch.bfloat16, torch.float16)
_PATHS_RS = ("auto", "fused", "sequential", "decomposed")
_PATHS_AG = ("auto", "fused", "fused_ce", "sequential", "decomposed")


def _check(op: str, a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor], layout: str):
    if layout not in ("nk", "kn"):
        raise ValueError(f"flux: unknown weight layout '{layout}' (expected nk for B [N, K] as torch.nn.Linear, "
                         "or kn for B [K, N])")
    for name, t, dim in (("a", a, 2), ("b", b, 2)):
        if t.dim() != dim:
            raise ValueError(f"flux {op}: {name} has {t.dim()} dimensions; expected {dim}")
        if t.dtype not in _DTYPES:
            raise ValueError(f"flux {op}: {name} is {t.dtype}; expected bfloat16 or float16")
    if b.dtype != a.dtype:
        raise ValueError(f"flux {op}: b is {b.dtype}; expected a's dtype {a.dtype}")
    k = b.shape[1] if layout == "nk" else b.shape[0]
    n = b.shape[0] if layout == "nk" else b.shape[1]
    if a.shape[1] != k:
        raise ValueError(f"flux {op}: a is {a.shape[0]} x {a.shape[1]}; expected K = {k} columns "
                         f"(b is {b.shape[0]} x {b.shape[1]}, layout {layout})")
    if bias is not None:
        if bias.dim() != 1 or bias.shape[0] != n or bias.dtype != a.dtype:
            raise ValueError(f"flux {op}: bias is {tuple(bias.shape)} {bias.dtype}; expected ({n},) {a.dtype}")
    return n, k


@torch.library.register_fake("flux::gemm")
def _gemm_fake(a, b, bias=None, layout="nk"):
    n, _ = _check("gemm", a, b, bias, layout)
    return a.new_empty((a.shape[0], n))


def _check_fp8(op, a, b, scale_a, scale_b, bias, out_dtype):
    """The FP8 operands' checks (fp8_operands in flux_torch.cpp, same messages); returns (m, n, k, out_dtype)."""
    out_dtype = torch.bfloat16 if out_dtype is None else out_dtype
    for name, t in (("a", a), ("b", b)):
        if t.dim() != 2:
            raise ValueError(f"flux {op}: {name} has {t.dim()} dimensions; expected 2")
        if t.dtype != torch.float8_e4m3fn:
            raise ValueError(f"flux {op}: {name} is {t.dtype}; expected float8_e4m3fn")
    if out_dtype not in _DTYPES:
        raise ValueError(f"flux {op}: out_dtype {out_dtype}; expected bfloat16 or float16")
    m, k = a.shape
    n = b.shape[0]
    if b.shape[1] != k:
        raise ValueError(f"flux {op}: b is {b.shape[0]} x {b.shape[1]}; expected [N, K] with K = {k} (a's columns)")
    for name, t in (("scale_a", scale_a), ("scale_b", scale_b)):
        if t.dtype != torch.float32:
            raise ValueError(f"flux {op}: {name} is {t.dtype}; expected float32")
    if not (scale_a.numel() == 1 and scale_b.numel() == 1) and (scale_a.numel() != m or scale_b.numel() != n):
        raise ValueError(f"flux {op}: scale_a has {scale_a.numel()} and scale_b {scale_b.numel()} elements; "
                         f"expected 1 and 1 (per tensor) or M = {m} and N = {n} (per row of a, column of b)")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != n or bias.dtype != out_dtype):
        raise ValueError(f"flux {op}: bias is {tuple(bias.shape)} {bias.dtype}; expected ({n},) {out_dtype}")
    return m, n, k, out_dtype


@torch.library.register_fake("flux::gemm_fp8")
def _gemm_fp8_fake(a, b, scale_a, scale_b, bias=None, out_dtype=None):
    m, n, _, out_dtype = _check_fp8("gemm_fp8", a, b, scale_a, scale_b, bias, out_dtype)
    return a.new_empty((m, n), dtype=out_dtype)


@torch.library.register_fake("flux::gemm_rs")
def _gemm_rs_fake(a, b, bias, group_name, layout="nk", path="auto"):
    n, _ = _check("gemm_rs", a, b, bias, layout)
    if path not in _PATHS_RS:
        raise ValueError(f"flux gemm_rs: unknown implementation '{path}' (expected auto, fused, sequential or "
                         "decomposed)")
    world = _dist.world_size_of(group_name)
    torch._check_value(a.shape[0] % world == 0,
                 lambda: f"flux gemm_rs: a has {a.shape[0]} rows; expected a multiple of the group size {world}")
    return a.new_empty((a.shape[0] // world, n))


@torch.library.register_fake("flux::ag_gemm")
def _ag_gemm_fake(a, b, bias, group_name, layout="nk", path="auto", return_gathered=False):
    n, _ = _check("ag_gemm", a, b, bias, layout)
    if path not in _PATHS_AG:
        raise ValueError(f"flux ag_gemm: unknown implementation '{path}' (expected auto, fused, fused_ce, sequential "
                         "or decomposed)")
    world = _dist.world_size_of(group_name)
    m = a.shape[0] * world
    return a.new_empty((m, n)), a.new_empty((m if return_gathered else 0, a.shape[1]))


@torch.library.register_fake("flux::gemm_rs_fp8")
def _gemm_rs_fp8_fake(a, b, scale_a, scale_b, bias, group_name, out_dtype=None, path="auto"):
    m, n, _, out_dtype = _check_fp8("gemm_rs_fp8", a, b, scale_a, scale_b, bias, out_dtype)
    if path not in _PATHS_RS:
        raise ValueError(f"flux gemm_rs: unknown implementation '{path}' (expected auto, fused, sequential or "
                         "decomposed)")
    world = _dist.world_size_of(group_name)
    torch._check_value(m % world == 0,
                       lambda: f"flux gemm_rs_fp8: a has {m} rows; expected a multiple of the group size {world}")
    return a.new_empty((m // world, n), dtype=out_dtype)


@torch.library.register_fake("flux::ag_gemm_fp8")
def _ag_gemm_fp8_fake(a, b, scale_a, scale_b, bias, group_name, out_dtype=None, path="auto", return_gathered=False):
    rows, n, k, out_dtype = _check_fp8("ag_gemm_fp8", a, b, scale_a, scale_b, bias, out_dtype)
    if path not in _PATHS_AG:
        raise ValueError(f"flux ag_gemm: unknown implementation '{path}' (expected auto, fused, fused_ce, sequential "
                         "or decomposed)")
    m = rows * _dist.world_size_of(group_name)
    per_row = not (scale_a.numel() == 1 and scale_b.numel() == 1)
    return (a.new_empty((m, n), dtype=out_dtype), a.new_empty((m if return_gathered else 0, k)),
            a.new_empty((m if return_gathered and per_row else 0,), dtype=torch.float32))


def gemm(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor] = None, layout: str = "nk") -> torch.Tensor:
    """out [M, N] = a B^T (+ bias) on Flux's GEMM core (B [N, K] for layout nk, [K, N] for kn)."""
    return torch.ops.flux.gemm(a, b, bias, layout)


def gemm_fp8(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
             bias: Optional[torch.Tensor] = None, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """out [M, N] = (a B^T) * scale_a * scale_b (+ bias) on Flux's FP8 GEMM core: a [M, K] and B [N, K] in
    float8_e4m3fn, fp32 scales per tensor ([1] each) or per row of a / column of B ([M], [N]), out in out_dtype
    (bfloat16 by default, or float16)."""
    return torch.ops.flux.gemm_fp8(a, b, scale_a, scale_b, bias, out_dtype)


def gemm_rs(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor] = None, group=None, layout: str = "nk",
            path: str = "auto") -> torch.Tensor:
    """Fused GEMM + reduce-scatter over `group` (default: the world): out [M/W, N]."""
    return torch.ops.flux.gemm_rs(a, b, bias, _dist.group_name(group), layout, path)


def ag_gemm(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor] = None, group=None, layout: str = "nk",
            path: str = "auto", return_gathered: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """Fused all-gather + GEMM over `group`: (out [M, N/W], gathered a [M, K] or [0, K])."""
    return torch.ops.flux.ag_gemm(a, b, bias, _dist.group_name(group), layout, path, return_gathered)


def gemm_rs_fp8(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                bias: Optional[torch.Tensor] = None, group=None, out_dtype: Optional[torch.dtype] = None,
                path: str = "auto") -> torch.Tensor:
    """Fused GEMM + reduce-scatter in FP8 over `group`: a [M, K/W] and B [N, K/W] float8_e4m3fn with this rank's
    scales (per tensor, or scale_a [M] and scale_b [N]); out [M/W, N] in out_dtype (bfloat16 by default)."""
    return torch.ops.flux.gemm_rs_fp8(a, b, scale_a, scale_b, bias, _dist.group_name(group), out_dtype, path)


def ag_gemm_fp8(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                bias: Optional[torch.Tensor] = None, group=None, out_dtype: Optional[torch.dtype] = None,
                path: str = "auto", return_gathered: bool = False
                ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fused all-gather + GEMM in FP8 over `group`: a [M/W, K] (gathered in FP8) with scale_a [M/W] per row or one
    per-tensor scale of the whole gathered a (the same on every rank), B [N/W, K]; (out [M, N/W] in out_dtype,
    gathered a [M, K] or [0, K], gathered scale_a [M] (per row, return_gathered) or [0])."""
    return torch.ops.flux.ag_gemm_fp8(a, b, scale_a, scale_b, bias, _dist.group_name(group), out_dtype, path,
                                      return_gathered)
