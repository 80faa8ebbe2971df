// scripts/device/gemv_probe.cu — a diagnosis aid (not part of the library): variants of an M = 1 GEMV
// (y[N] = B[N, K] x[K], bf16, fp32 accumulation) timed side by side on the H200, to choose the structure of the
// GEMM core's GEMV kernel (src/gemm/kernel/gemv_kernel.cuh). Each variant: a CTA of W warps, each warp R rows of
// B, each lane U 16-byte loads per row per loop (k = base + 256 u + 8 lane), optionally double-buffered in
// registers (the next loop's loads issued before this loop's math). Timed with CUDA events, median of 30 after
// 5 warm-ups, B rotated over copies totalling > 2 x L2; an empty kernel gives the floor of the timing.
// Usage: gemv_probe [N K ...]   (build: nvcc -O3 -arch=sm_90a -std=c++17 gemv_probe.cu -o gemv_probe)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_check.h"

__device__ __forceinline__ uint4 ldg_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ float dot8(const uint4& b, const uint4& a) {
  const uint32_t bw[4] = {b.x, b.y, b.z, b.w}, aw[4] = {a.x, a.y, a.z, a.w};
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    s = fmaf(__uint_as_float(bw[i] << 16), __uint_as_float(aw[i] << 16), s);
    s = fmaf(__uint_as_float(bw[i] & 0xffff0000u), __uint_as_float(aw[i] & 0xffff0000u), s);
  }
  return s;
}

template <int W, int R, int U, bool DB, int MINB>
__global__ void __launch_bounds__(W * 32, MINB)
    gemv(const __nv_bfloat16* __restrict__ b, const __nv_bfloat16* __restrict__ x, __nv_bfloat16* y, int n, int k) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row0 = (int64_t(blockIdx.x) * W + warp) * R;
  if (row0 >= n) return;
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.f;
  uint4 cur[R][U], nxt[R][U];
  auto load = [&](uint4 (&v)[R][U], int64_t base) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t kk = base + u * 256 + lane * 8;
#pragma unroll
      for (int r = 0; r < R; ++r) v[r][u] = kk < k ? ldg_stream(b + (row0 + r) * k + kk) : make_uint4(0, 0, 0, 0);
    }
  };
  auto math = [&](const uint4 (&v)[R][U], int64_t base) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t kk = base + u * 256 + lane * 8;
      if (kk < k) {
        const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + kk));
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] += dot8(v[r][u], xv);
      }
    }
  };
  constexpr int kStep = U * 256;
  load(cur, 0);
  for (int64_t base = 0; base < k; base += kStep) {
    if constexpr (DB) {
      if (base + kStep < k) load(nxt, base + kStep);
      math(cur, base);
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int u = 0; u < U; ++u) cur[r][u] = nxt[r][u];
    } else {
      math(cur, base);
      if (base + kStep < k) load(cur, base + kStep);
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int off = 16; off >= 1; off /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], off);
  if (lane < R) {
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (lane == r) y[row0 + r] = __float2bfloat16(acc[r]);
  }
}

__global__ void empty_kernel() {}

__global__ void fill(__nv_bfloat16* p, int64_t count, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    p[i] = __float2bfloat16(float(int(h % 2001) - 1000) / 1000.f);
  }
}

struct Variant {
  const char* name;
  void (*fn)(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, int, int);
  int rows_per_cta, threads;
};
#define V(W, R, U, DB, MINB) \
  Variant { "w" #W "_r" #R "_u" #U "_db" #DB "_b" #MINB, &gemv<W, R, U, DB, MINB>, W * R, W * 32 }

int main(int argc, char** argv) {
  std::vector<std::pair<int, int>> shapes;
  for (int i = 1; i + 1 < argc; i += 2) shapes.push_back({std::atoi(argv[i]), std::atoi(argv[i + 1])});
  if (shapes.empty()) shapes = {{3072, 2048}, {8192, 1024}, {4096, 4096}, {4608, 7168}, {12288, 3072},
                                {13312, 16384}, {28672, 8192}, {36864, 12288}, {30808, 35376}};
  const Variant variants[] = {
      V(8, 4, 4, false, 1), V(8, 4, 4, true, 1), V(8, 2, 4, false, 2), V(8, 2, 4, true, 2), V(8, 2, 8, false, 1),
      V(8, 1, 8, false, 2), V(8, 1, 8, true, 2), V(4, 2, 4, true, 4), V(4, 1, 8, true, 4), V(8, 1, 16, false, 1),
      V(8, 2, 8, true, 1),  V(4, 4, 4, true, 2),
  };
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (const Variant& v : variants) {
    int blocks = 0, regs = 0;
    cudaFuncAttributes attr{};
    CK(cudaFuncGetAttributes(&attr, v.fn));
    regs = attr.numRegs;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, v.fn, v.threads, 0));
    std::printf("variant %-18s regs %3d ctas/SM %d\n", v.name, regs, blocks);
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto median_us = [&](auto&& launch) {
    for (int i = 0; i < 5; ++i) launch(i);
    std::vector<float> t;
    for (int i = 0; i < 30; ++i) {
      CK(cudaEventRecord(e0));
      launch(i);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      t.push_back(ms * 1000.f);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  std::printf("empty kernel: %.2f us\n", median_us([&](int) { empty_kernel<<<1, 32>>>(); }));
  for (auto [n, k] : shapes) {
    const int64_t elems = int64_t(n) * k;
    const int copies = int(std::max<int64_t>(2, (int64_t(240) << 20) / (elems * 2) + 1));
    __nv_bfloat16 *b, *x, *y;
    CK(cudaMalloc(&b, size_t(elems) * 2 * copies));
    CK(cudaMalloc(&x, size_t(k) * 2));
    CK(cudaMalloc(&y, size_t(n) * 2));
    fill<<<1024, 256>>>(b, elems * copies, 1);
    fill<<<64, 256>>>(x, k, 2);
    CK(cudaGetLastError());
    std::vector<float> ref(n);
    const double bound_us = double(elems) * 2 / 4.8e6;
    std::printf("N %d K %d (bound %.1f us, %d copies):", n, k, bound_us, copies);
    std::vector<__nv_bfloat16> h0(n), h1(n);
    bool first = true;
    for (const Variant& v : variants) {
      const int grid = (n + v.rows_per_cta - 1) / v.rows_per_cta;
      const float us = median_us([&](int i) { v.fn<<<grid, v.threads>>>(b + (i % copies) * elems, x, y, n, k); });
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      v.fn<<<grid, v.threads>>>(b, x, y, n, k);
      CK(cudaMemcpy(first ? h0.data() : h1.data(), y, size_t(n) * 2, cudaMemcpyDeviceToHost));
      double worst = 0;
      if (!first) {
        for (int i = 0; i < n; ++i) {
          const double a = __bfloat162float(h0[i]), c = __bfloat162float(h1[i]);
          worst = std::max(worst, std::abs(a - c) / (std::abs(a) + 1.0));
        }
      }
      first = false;
      std::printf(" %s %.1f%s", v.name, us, worst > 1e-2 ? "(MISMATCH)" : "");
    }
    std::printf("\n");
    CK(cudaFree(b));
    CK(cudaFree(x));
    CK(cudaFree(y));
  }
  return 0;
}
