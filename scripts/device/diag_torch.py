import os, sys
import torch, torch.distributed as dist
print("import torch ok", flush=True)
import flux_torch
print("import flux_torch ok", flush=True)
a = torch.randn(256, 128, device="cuda", dtype=torch.bfloat16)
b = torch.randn(64, 128, device="cuda", dtype=torch.bfloat16)
print("gemm", (flux_torch.gemm(a, b).float() - a.float() @ b.float().t()).abs().max().item(), flush=True)
dist.init_process_group("gloo", init_method="file:///tmp/diagstore", rank=0, world_size=1)
print("pg ok", flush=True)
out = flux_torch.gemm_rs(a, b)
torch.cuda.synchronize()
print("gemm_rs", (out.float() - a.float() @ b.float().t()).abs().max().item(), flush=True)
