// scripts/device/diag_gemm.cpp — a diagnosis aid: one GEMM through libflux.so (the shared build), no torch.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "flux/gemm.h"

int main() {
  flux::GemmDesc d;
  d.n = 64;
  d.k = 128;
  flux::GemmPlan plan(d);
  void *a, *b, *c;
  cudaMalloc(&a, 256 * 128 * 2);
  cudaMalloc(&b, 64 * 128 * 2);
  cudaMalloc(&c, 256 * 64 * 2);
  flux::GemmArgs args;
  args.m = 256;
  args.a = a;
  args.b = b;
  args.c = c;
  plan.run(args, nullptr);
  std::printf("diag_gemm: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
  return 0;
}
