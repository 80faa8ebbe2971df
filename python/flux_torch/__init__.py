"""flux_torch — Flux's fused tensor-parallel GEMMs as PyTorch ops and layers.

  torch.ops.flux.gemm / gemm_fp8 / gemm_rs / ag_gemm / gemm_rs_fp8 / ag_gemm_fp8   custom ops (schemas and
      shapes: flux_torch._ops)
  flux_torch.gemm / gemm_rs / ag_gemm / gemm_rs_fp8 / ag_gemm_fp8   the same, taking a process group instead of its name
  flux_torch.ColumnParallelLinear, RowParallelLinear, TPMLP   Megatron-style layers (sequence parallel)
  flux_torch.register_group, release, set_plan_cache_limit, cached_plans, check_status   groups and plans

Import torch.distributed and init_process_group first (torchrun); every rank of a group calls the same
ops in the same order.
"""
import torch  # noqa: F401  (loads libtorch, which the extension links)

from . import _C  # noqa: F401  (registers torch.ops.flux.* CUDA kernels)
from ._ops import ag_gemm, ag_gemm_fp8, gemm, gemm_fp8, gemm_rs, gemm_rs_fp8
from .distributed import cached_plans, check_status, group_name, register_group, release, set_plan_cache_limit
from .layers import ColumnParallelLinear, RowParallelLinear, TPMLP

__version__ = "0.1.0"
__all__ = ["gemm", "gemm_fp8", "gemm_rs", "ag_gemm", "gemm_rs_fp8", "ag_gemm_fp8", "register_group", "group_name", "release", "set_plan_cache_limit",
           "cached_plans", "check_status", "ColumnParallelLinear", "RowParallelLinear", "TPMLP"]
