// src/gemm/kernel/gemv_kernel.cuh — the GEMM core's GEMV kernel: C [M, N] = A [M, K] B[N, K]^T (+ bias) for
// M of one or a few rows (config 8x16x512_gemv: units of 8 rows of C x 16 columns), where the call is the bytes
// of B over HBM (M = 1: 2 N K bytes for 2 N K flops) and what matters is how many bytes are in flight.
//
// Structure: a work item is a unit (up to 8 rows of A x 16 rows of B) and a K slice; CTAs take items i,
// i + grid, ... (a grid of min(items, resident CTAs), or GemmOptions::max_sms CTAs, as the skinny kernels).
// Each of the 8 warps owns 2 rows of B and streams them over the slice's K straight into registers: per
// loop, lane l loads 16 bytes (8 k) at k = base + 256 u + 8 l of both rows for u < kU, so a warp reads
// kU x 512 contiguous bytes per row per loop and has 2 kU loads of 16 bytes in flight per lane. B is read with
// ld.global.nc.L1::no_allocate (streamed once); A (a few rows, read by every warp and CTA) through L1.
// Products in fp32 FMAs on the CUDA cores.
// Why this shape (scripts/device/gemv_probe.cu, H200, 2026-12-04, M = 1, 9 shapes, 12 variants of warps per CTA,
// rows per warp, loads per row and register double-buffering: bench/results/logs/gemv_probe_h200_20261204_s19b.log):
// 8 warps x 2 rows x 4 loads (63 registers, 4 CTAs per SM) was fastest or within 3% on 7 of 9; double-buffering
// in registers halved the CTAs per SM and was never faster. Every variant streamed large B at 0.80-0.85 of
// 4.8 TB/s where cuBLAS's decode kernel (cublasLt tile 64x8, TMA) reaches 0.91: the GEMV is a decode kernel for
// the plans that run the extension points (swap-AB cannot), and a candidate at M = 1 only (gemm_config.cpp):
// at M = 2..8 its FMAs (8 M per 16 bytes of B, plus the conversions) fall behind the stream (s19a: 1.3-3x
// slower than the best other variant).
// Reduction: each lane holds 2 x kMT fp32 sums over its k; the warp adds them with a butterfly of shuffles
// (a fixed tree: the result does not depend on timing), lanes 0 .. 2 kMT - 1 store one element each (bias
// added in fp32 before rounding). Split-K (kPartial) writes slice s of [S, M, N] fp32 partials, summed in
// slice order by split_k_reduce.cu (deterministic), as the skinny kernels.
// kMT (rows of A per unit the kernel computes: 1, 2, 4 or 8) is chosen at launch from M (the registers and
// the A loads scale with it); a unit's rows past M are never loaded or stored.
//
// Extension points (flux/gemm.h), all three, as the skinny kernels:
//   tile order      item i is unit order.unit_at(i / splits), slice i % splits;
//   wait-before-load each warp issues its first loads of B (B never waits: it is the local weight), then one
//                   thread waits (bounded, acquire, system scope) for flags[unit row] and the CTA barrier
//                   orders every lane's loads of A after it;
//   publish-after-store after the unit's stores, a CTA barrier and a system fence, thread 0 releases the
//                   unit's flag or bumps its M-block counter (the split-K reduction publishes instead).
// Assumptions: sm_90a, K-major weight (WeightLayout::kNK), A/B/C/bias 16-byte aligned, N and K (and
// K / splits) multiples of 8 (validated by the plan): a lane's 8 k are all in or all out of K, and a warp's 2
// rows of B are all in or all out of N.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "src/device/half_convert.cuh"
#include "src/device/signal.cuh"
#include "src/gemm/gemm_launch.h"
#include "src/gemm/kernel/cta_hooks.cuh"

namespace flux::gemm::kernel {

constexpr int kGemvWarps = 8;
constexpr int kGemvThreads = kGemvWarps * 32;
constexpr int kGemvRowsPerWarp = 2;                         // rows of B per warp
constexpr int kGemvTileN = kGemvWarps * kGemvRowsPerWarp;  // 16: the config's tile_n
constexpr int kGemvTileM = 8;                              // the config's tile_m (kMT <= this)
// Resident CTAs per SM the registers are capped for (64 per thread): the probe's fastest variant ran 4.
constexpr int kGemvMinCtasPerSm = 4;
// 16-byte loads per row per lane per loop: more for fewer rows of A (registers: 4 x kU x 4 for B).
template <int kMT>
constexpr int gemv_unroll() {
  return kMT <= 2 ? 4 : 2;
}

__device__ __forceinline__ uint4 ldg_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Two 16-bit values of one 32-bit word as floats.
template <class T>
__device__ __forceinline__ float2 unpack2(uint32_t w);
template <>
__device__ __forceinline__ float2 unpack2<__nv_bfloat16>(uint32_t w) {
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}
template <>
__device__ __forceinline__ float2 unpack2<__half>(uint32_t w) {
  __half2 h;
  static_assert(sizeof(h) == sizeof(w), "half2 is 32 bits");
  memcpy(&h, &w, sizeof(w));
  return __half22float2(h);
}

template <class T>
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const float2 a = unpack2<T>(v.x), b = unpack2<T>(v.y), c = unpack2<T>(v.z), d = unpack2<T>(v.w);
  f[0] = a.x, f[1] = a.y, f[2] = b.x, f[3] = b.y, f[4] = c.x, f[5] = c.y, f[6] = d.x, f[7] = d.y;
}

template <class T, int kMT, bool kPartial>
__global__ void __launch_bounds__(kGemvThreads, kGemvMinCtasPerSm) gemv_kernel(const __grid_constant__ KernelLaunch p) {
  constexpr int kU = gemv_unroll<kMT>();
  constexpr int kR = kGemvRowsPerWarp;
  static_assert(kMT >= 1 && kMT <= kGemvTileM && (kMT & (kMT - 1)) == 0, "rows of A per unit: 1, 2, 4 or 8");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // The split-K reduction (a programmatic dependent) may be scheduled now; it waits for this grid's
  // completion itself (griddepcontrol.wait). This kernel never waits on the one before it.
  if constexpr (kPartial) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  const int64_t ks = p.k / p.splits;
  const int64_t items = p.order.total_units() * p.splits;

  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t unit = item / p.splits;
    const int32_t slice = int32_t(item - unit * p.splits);
    const UnitCoord uc = p.order.unit_at(unit);
    const int64_t m0 = int64_t(uc.m) * kGemvTileM;
    const int64_t n_row = int64_t(uc.n) * kGemvTileN + warp * kR;  // this warp's first row of B
    const int rows = int(p.m - m0 < kMT ? p.m - m0 : kMT);           // real rows of A (>= 1)
    const bool warp_active = n_row < p.n;  // both rows or none (N is a multiple of 8)
    const int64_t kb = int64_t(slice) * ks, ke = kb + ks;

    float acc[kR][kMT];
#pragma unroll
    for (int r = 0; r < kR; ++r)
#pragma unroll
      for (int i = 0; i < kMT; ++i) acc[r][i] = 0.f;

    const T* brow = b + (warp_active ? n_row : 0) * p.k;
    uint4 bv[kR][kU];
    auto load_b = [&](int64_t base) {
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int64_t kk = base + u * 256 + lane * 8;
        const bool ok = warp_active && kk < ke;
#pragma unroll
        for (int r = 0; r < kR; ++r) bv[r][u] = ok ? ldg_stream(brow + r * p.k + kk) : make_uint4(0, 0, 0, 0);
      }
    };
    load_b(kb);  // in flight while the wait below polls

    cta_wait_before_load(p.wait, uc.m);

    for (int64_t base = kb; base < ke; base += kU * 256) {
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int64_t kk = base + u * 256 + lane * 8;
        if (!warp_active || kk >= ke) continue;
        float bf[kR][8];
#pragma unroll
        for (int r = 0; r < kR; ++r) unpack8<T>(bv[r][u], bf[r]);
#pragma unroll
        for (int i = 0; i < kMT; ++i) {
          if (i < rows) {
            float af[8];
            unpack8<T>(__ldg(reinterpret_cast<const uint4*>(a + (m0 + i) * p.k + kk)), af);
#pragma unroll
            for (int r = 0; r < kR; ++r)
#pragma unroll
              for (int e = 0; e < 8; ++e) acc[r][i] = fmaf(af[e], bf[r][e], acc[r][i]);
          }
        }
      }
      if (base + kU * 256 < ke) load_b(base + kU * 256);
    }

    // Butterfly: every lane ends with every sum (a fixed order of additions).
#pragma unroll
    for (int r = 0; r < kR; ++r)
#pragma unroll
      for (int i = 0; i < kMT; ++i)
#pragma unroll
        for (int off = 16; off >= 1; off /= 2) acc[r][i] += __shfl_xor_sync(0xffffffffu, acc[r][i], off);

    if (warp_active) {
      // Lane r + kR i stores row i, column r of this warp's kR (compile-time indices: the sums stay in registers).
#pragma unroll
      for (int i = 0; i < kMT; ++i) {
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          if (lane == r + kR * i && i < rows) {
            const int64_t n = n_row + r;
            if constexpr (kPartial) {
              p.workspace[int64_t(slice) * p.m * p.n + (m0 + i) * p.n + n] = acc[r][i];
            } else {
              float v = acc[r][i];
              if (p.bias != nullptr) v += device::to_float<T>(static_cast<const T*>(p.bias)[n]);
              static_cast<T*>(p.c)[(m0 + i) * p.n + n] = T(v);
            }
          }
        }
      }
    }
    if constexpr (!kPartial) {
      cta_publish_after_store(p.publish, uc);
    }
  }  // items
}

}  // namespace flux::gemm::kernel
