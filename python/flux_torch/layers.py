"""Megatron-style tensor-parallel layers with sequence parallelism, on Flux's fused ops.

Notation: W ranks in the group, M tokens in all (M/W per rank: sequence parallel), K in, N out.

ColumnParallelLinear  x [M/W, K] -> y [M, N/W]; weight [N/W, K] (nn.Linear's [out, in]), bias [N/W]
  forward   y = all_gather(x) W^T + b                 AG+GEMM, keeping the gathered x [M, K] for backward
  backward  dx = reduce_scatter(dy W)                 GEMM+RS with W as B [K'=N/W, N'=K] (layout kn:
                                                       no transpose of the weight)
            dW = dy^T x_gathered, db = sum_rows dy    cuBLAS (torch.matmul) on the kept gathered input
RowParallelLinear     x [M, K/W] -> y [M/W, N]; weight [N, K/W], bias [N] (added once)
  forward   y = reduce_scatter(x W^T) + b             GEMM+RS
  backward  dx = all_gather(dy) W, dy_gathered         AG+GEMM with W as B [K'=N, N'=K/W] (layout kn),
                                                       returning the gathered dy [M, N]
            dW = dy_gathered^T x, db = sum_rows dy_gathered   (the full bias gradient on every rank)
TPMLP                 x [M/W, H] -> up (column) -> activation -> down (row) -> [M/W, H]

The layers only call torch.ops.flux.* with their group's name (a string fixed at construction), so
torch.compile(fullgraph=True) traces them without a graph break, and they can be captured in CUDA graphs
once each shape has run eagerly (plans are built on first use).
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.distributed as dist
import torch.nn.functional as F

from . import distributed as _dist


class _ColumnParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, group_name: str, path: str):
        out, gathered = torch.ops.flux.ag_gemm(x, weight, bias, group_name, "nk", path, True)
        ctx.save_for_backward(gathered, weight)
        ctx.has_bias = bias is not None
        ctx.group_name = group_name
        return out

    @staticmethod
    def backward(ctx, dy):
        gathered, weight = ctx.saved_tensors
        dy = dy.contiguous()
        dx = torch.ops.flux.gemm_rs(dy, weight, None, ctx.group_name, "kn", "auto")
        dw = dy.t().matmul(gathered)
        db = dy.sum(0) if ctx.has_bias else None
        return dx, dw, db, None, None


class _RowParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, group_name: str, path: str):
        out = torch.ops.flux.gemm_rs(x, weight, bias, group_name, "nk", path)
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        ctx.group_name = group_name
        return out

    @staticmethod
    def backward(ctx, dy):
        x, weight = ctx.saved_tensors
        dy = dy.contiguous()
        dx, dy_gathered = torch.ops.flux.ag_gemm(dy, weight, None, ctx.group_name, "kn", "auto", True)
        dw = dy_gathered.t().matmul(x)
        db = dy_gathered.sum(0) if ctx.has_bias else None
        return dx, dw, db, None, None


def _shard_rows(t: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    if t.shape[0] % world != 0:
        raise ValueError(f"flux_torch: {t.shape[0]} rows do not split over {world} ranks")
    rows = t.shape[0] // world
    return t[rank * rows:(rank + 1) * rows]


class _TPLinear(torch.nn.Module):
    def __init__(self, in_features: int, out_features: int, bias: bool, group, device, dtype, path: str,
                 sharded: str):
        super().__init__()
        world = dist.get_world_size(group)
        features = out_features if sharded == "out" else in_features
        if features % world != 0:
            raise ValueError(f"flux_torch.{type(self).__name__}: {sharded}_features {features} is not a multiple of "
                             f"the group size {world}")
        if sharded == "out":  # column parallel: weight rows and bias split
            weight_shape, bias_features = (out_features // world, in_features), out_features // world
        else:  # row parallel: weight columns split, bias whole (added once)
            weight_shape, bias_features = (out_features, in_features // world), out_features
        dtype = dtype if dtype is not None else torch.bfloat16
        if dtype not in (torch.bfloat16, torch.float16):
            raise ValueError(f"flux_torch: dtype {dtype}; expected torch.bfloat16 or torch.float16")
        self.group = group
        self.group_name = _dist.group_name(group)
        self.world = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.in_features, self.out_features, self.path = in_features, out_features, path
        self.weight = torch.nn.Parameter(torch.empty(weight_shape, device=device, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.empty(bias_features, device=device, dtype=dtype)) if bias else None
        # nn.Linear's initialization, on the full fan-in.
        bound = 1.0 / math.sqrt(in_features)
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    @classmethod
    def _shard_of(cls, linear: torch.nn.Linear, group, path: str, weight_shard, bias_shard):
        layer = cls(linear.in_features, linear.out_features, linear.bias is not None, group, linear.weight.device,
                    linear.weight.dtype, path)
        with torch.no_grad():
            layer.weight.copy_(weight_shard(linear.weight, layer.rank, layer.world))
            if linear.bias is not None:
                layer.bias.copy_(bias_shard(linear.bias, layer.rank, layer.world))
        return layer

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"world={self.world}, group='{self.group_name}', path={self.path}")


class ColumnParallelLinear(_TPLinear):
    """x [M/W, in] -> y [M, out/W] (see the module docstring)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, group: Optional[dist.ProcessGroup] = None,
                 device=None, dtype=None, path: str = "auto"):
        super().__init__(in_features, out_features, bias, group, device, dtype, path, "out")

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, group=None, path: str = "auto"):
        """This rank's shard of a full nn.Linear (weight rows, bias entries)."""
        return cls._shard_of(linear, group, path, lambda w, r, n: _shard_rows(w, r, n),
                             lambda b, r, n: _shard_rows(b, r, n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ColumnParallel.apply(x, self.weight, self.bias, self.group_name, self.path)


class RowParallelLinear(_TPLinear):
    """x [M, in/W] -> y [M/W, out] (see the module docstring)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, group: Optional[dist.ProcessGroup] = None,
                 device=None, dtype=None, path: str = "auto"):
        super().__init__(in_features, out_features, bias, group, device, dtype, path, "in")

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, group=None, path: str = "auto"):
        """This rank's shard of a full nn.Linear (weight columns; the whole bias)."""
        return cls._shard_of(linear, group, path, lambda w, r, n: _shard_rows(w.t(), r, n).t(), lambda b, r, n: b)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _RowParallel.apply(x, self.weight, self.bias, self.group_name, self.path)


_ACTIVATIONS = {"gelu": lambda t: F.gelu(t, approximate="tanh"), "relu": F.relu, "silu": F.silu}


class TPMLP(torch.nn.Module):
    """x [M/W, hidden] -> ColumnParallelLinear(hidden, ffn) -> activation -> RowParallelLinear(ffn, hidden)."""

    def __init__(self, hidden: int, ffn: int, bias: bool = True, group: Optional[dist.ProcessGroup] = None,
                 device=None, dtype=None, activation: str = "gelu", path: str = "auto"):
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"flux_torch.TPMLP: activation '{activation}' (expected one of {sorted(_ACTIVATIONS)})")
        self.activation = activation
        self.up = ColumnParallelLinear(hidden, ffn, bias, group, device, dtype, path)
        self.down = RowParallelLinear(ffn, hidden, bias, group, device, dtype, path)

    @classmethod
    def from_linears(cls, up: torch.nn.Linear, down: torch.nn.Linear, group=None, activation: str = "gelu",
                     path: str = "auto"):
        mlp = cls.__new__(cls)
        torch.nn.Module.__init__(mlp)
        mlp.activation = activation
        mlp.up = ColumnParallelLinear.from_linear(up, group, path)
        mlp.down = RowParallelLinear.from_linear(down, group, path)
        return mlp

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(_ACTIVATIONS[self.activation](self.up(x)))
