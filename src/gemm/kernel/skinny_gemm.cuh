// src/gemm/kernel/skinny_gemm.cuh — the GEMM core's decode kernels: C [M, N] = A [M, K] B[N, K]^T (+ bias)
// for M up to a few dozen rows, where the weight B is the whole cost (M = 1 is a GEMV bound by the bytes
// of B over HBM) and a warp-specialized TMA kernel's fixed cost (cluster launch, descriptor fetch,
// pipeline setup, ~8-10 us measured with ncu on the H200) is most of the call.
//
// Structure: a work item is an output tile (tile_m rows of M x 64 columns of N) and K slice; CTAs take
// items i, i + grid, ... (a grid of min(items, resident CTAs), or GemmOptions::max_sms CTAs, so a fused
// op's SM budget holds as for the persistent kernels); no clusters, no TMA, no shared-memory pipeline. Each of the 4 warps owns 16 rows of B (16 columns of C) and all rows
// of the tile; it streams its B rows straight from global memory into registers, 16 bytes per lane per
// row and 32-wide K chunk, U chunks in flight per lane, and multiplies with mma.sync m16n8k16 (fp32
// accumulate), B as the instruction's 16-row A operand and the rows of A as its 8-column B operand (the
// same swap cuBLAS's decode kernels make, nvjet ..._64x8_...). The loads need no shuffles: a dot
// product does not depend on the order of K, so each lane's 16-byte vector (8 consecutive k) is assigned
// to the k positions its fragment holds in two k16 steps (lane quad t, step s: physical k 8t + 4s + 0..3
// are logical k 2t, 2t+1, 2t+8, 2t+9), the same assignment for both operands. Rows of A are read through
// L1 (the 4 warps read the same vectors); B bypasses it (__ldcs: each byte is read once).
// Epilogue: the accumulators go through shared memory so C (or the fp32 partials) is written in 16-byte
// vectors; bias added in fp32 before rounding.
//
// Extension points (flux/gemm.h), all three:
//   tile order      item i is unit order.unit_at(i / splits), slice i % splits; items are taken in index
//                   order, so the order map orders the tiles as the persistent kernels visit them;
//   wait-before-load one thread waits (bounded, acquire, system scope) for flags[tile row] before any
//                   load of A, then the CTA barrier orders every lane's loads after it;
//   publish-after-store after the tile's stores, a CTA barrier and a system fence, thread 0 releases the
//                   tile's flag or bumps its M-block counter (the split-K reduction publishes instead).
// Split-K: kPartial writes slice s of [S, M, N] fp32 partials (no bias), summed in slice order by
// split_k_reduce.cu (deterministic), which this kernel lets launch early (griddepcontrol.launch_dependents;
// it never waits on the kernel before it, so AG+GEMM may launch it as its gather's programmatic
// dependent).
// Assumptions: sm_90a, K-major weight (WeightLayout::kNK; the only layout compiled for this family),
// A/B/C/bias 16-byte aligned, N and K (and K / splits) multiples of 8 (validated by the plan).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "src/common/check.h"
#include "src/common/device_guard.h"
#include "src/device/signal.cuh"
#include "src/gemm/gemm_launch.h"

namespace flux::gemm {
namespace kernel {

constexpr int kSkinnyChunkK = 32;       // K per 16-byte vector per lane quad (4 lanes x 8 elements)
constexpr int kSkinnyRowsPerWarp = 16;  // rows of B per warp: the m16 of mma.sync

template <DType>
struct SkinnyElement;
template <>
struct SkinnyElement<DType::kBF16> {
  using type = __nv_bfloat16;
};
template <>
struct SkinnyElement<DType::kFP16> {
  using type = __half;
};

template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                          uint32_t b0, uint32_t b1);
template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                                  uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

template <class T>
__device__ __forceinline__ float skinny_to_float(T v);
template <>
__device__ __forceinline__ float skinny_to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <>
__device__ __forceinline__ float skinny_to_float<__half>(__half v) { return __half2float(v); }

// kTileM rows of C (a multiple of 8), kTileN columns (16 per warp), kU chunks of 32 K in flight per lane.
template <class T, int kTileM, int kTileN, int kU, bool kPartial>
__global__ void __launch_bounds__(kTileN / kSkinnyRowsPerWarp * 32) skinny_gemm_kernel(const KernelLaunch p) {
  constexpr int kThreads = kTileN / kSkinnyRowsPerWarp * 32;
  constexpr int kJ = kTileM / 8;  // n8 tiles of the instruction over the rows of A
  static_assert(kTileM % 8 == 0 && kTileN % kSkinnyRowsPerWarp == 0 && kU >= 1, "skinny GEMM tile");
  __shared__ __align__(16) float tile[kTileM][kTileN + 4];  // +4: conflict-free fragment stores, 16 B rows

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // The split-K reduction (a programmatic dependent) may be scheduled now; it waits for this grid's
  // completion itself (griddepcontrol.wait). This kernel never waits on the one before it.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  const int64_t items = p.order.total_units() * p.splits;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
  if (item != int64_t(blockIdx.x)) __syncthreads();  // the previous item's epilogue is done with `tile`
  const int64_t unit = item / p.splits;
  const int32_t slice = int32_t(item - unit * p.splits);
  const UnitCoord uc = p.order.unit_at(unit);
  const int64_t m0 = int64_t(uc.m) * kTileM, n0 = int64_t(uc.n) * kTileN;
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  const int64_t ks = p.k / p.splits;
  const int64_t kb = int64_t(slice) * ks, ke = kb + ks;

  if (p.wait.flags != nullptr && uc.m < p.wait.tiles_m) {
    if (threadIdx.x == 0) {
      device::chaos_delay(p.wait.ctx.chaos_seed, uint32_t(uc.m) * 31u + 1u);
      const uint32_t value = p.wait.value_ptr != nullptr ? *p.wait.value_ptr : p.wait.value;
      device::wait_flag_geq(p.wait.flags + uc.m, value, uc.m, p.wait.ctx);
    }
    __syncthreads();  // every lane's loads of A come after the acquire
  }

  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  const int64_t nr0 = n0 + warp * kSkinnyRowsPerWarp + g, nr1 = nr0 + 8;
  const bool w0ok = nr0 < p.n, w1ok = nr1 < p.n;
  const T* w0 = b + (w0ok ? nr0 : 0) * p.k;
  const T* w1 = b + (w1ok ? nr1 : 0) * p.k;
  const int rows = int(p.m - m0 < kTileM ? p.m - m0 : kTileM);
  const int jn = (rows + 7) / 8;  // n8 tiles holding real rows (warp-uniform)
  const T* arow[kJ];
#pragma unroll
  for (int j = 0; j < kJ; ++j) {
    const int r = 8 * j + g;
    arow[j] = a + (r < rows ? m0 + r : 0) * p.k;
  }
  const int arows_ok = rows - g;  // row 8j + g is real when 8j < arows_ok

  float acc[kJ][4];
#pragma unroll
  for (int j = 0; j < kJ; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

  for (int64_t k0 = kb; k0 < ke; k0 += kSkinnyChunkK * kU) {
    uint4 wv[kU][2];
    uint4 av[kU][kJ];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int64_t kk = k0 + u * kSkinnyChunkK + 8 * t;
      const bool kok = kk < ke;  // K / splits is a multiple of 8: a vector is all in or all out
      const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
      wv[u][0] = kok && w0ok ? __ldcs(reinterpret_cast<const uint4*>(w0 + kk)) : zero;
      wv[u][1] = kok && w1ok ? __ldcs(reinterpret_cast<const uint4*>(w1 + kk)) : zero;
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
        av[u][j] = j < jn && kok && 8 * j < arows_ok ? __ldg(reinterpret_cast<const uint4*>(arow[j] + kk)) : zero;
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      // Step 0: elements 0..3 of each vector (logical k 2t, 2t+1 | 2t+8, 2t+9); step 1: elements 4..7.
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
        if (j < jn) {
          mma_16816<T>(acc[j], wv[u][0].x, wv[u][1].x, wv[u][0].y, wv[u][1].y, av[u][j].x, av[u][j].y);
          mma_16816<T>(acc[j], wv[u][0].z, wv[u][1].z, wv[u][0].w, wv[u][1].w, av[u][j].z, av[u][j].w);
        }
      }
    }
  }

  // Fragment (j): lane (g, t) holds C[8j + 2t (+1)][16 warp + g (+8)] in acc[j][0..3].
#pragma unroll
  for (int j = 0; j < kJ; ++j) {
    const int ml = 8 * j + 2 * t, nl = warp * kSkinnyRowsPerWarp + g;
    tile[ml][nl] = acc[j][0];
    tile[ml + 1][nl] = acc[j][1];
    tile[ml][nl + 8] = acc[j][2];
    tile[ml + 1][nl + 8] = acc[j][3];
  }
  __syncthreads();
  const int cols = int(p.n - n0 < kTileN ? p.n - n0 : kTileN);  // a multiple of 8
  if constexpr (kPartial) {
    float* dst = p.workspace + int64_t(slice) * p.m * p.n;
    const int per_row = cols / 4;
    for (int e = int(threadIdx.x); e < rows * per_row; e += kThreads) {
      const int r = e / per_row, c = (e - r * per_row) * 4;
      *reinterpret_cast<float4*>(dst + (m0 + r) * p.n + n0 + c) = *reinterpret_cast<const float4*>(&tile[r][c]);
    }
  } else {
    T* out = static_cast<T*>(p.c);
    const T* bias = static_cast<const T*>(p.bias);
    const int per_row = cols / 8;
    for (int e = int(threadIdx.x); e < rows * per_row; e += kThreads) {
      const int r = e / per_row, c = (e - r * per_row) * 8;
      float f[8];
#pragma unroll
      for (int q = 0; q < 8; ++q) f[q] = tile[r][c + q];
      if (bias != nullptr) {
        const uint4 bv = __ldg(reinterpret_cast<const uint4*>(bias + n0 + c));
        const T* bh = reinterpret_cast<const T*>(&bv);
#pragma unroll
        for (int q = 0; q < 8; ++q) f[q] += skinny_to_float<T>(bh[q]);
      }
      uint4 v;
      v.x = pack2<T>(f[0], f[1]);
      v.y = pack2<T>(f[2], f[3]);
      v.z = pack2<T>(f[4], f[5]);
      v.w = pack2<T>(f[6], f[7]);
      *reinterpret_cast<uint4*>(out + (m0 + r) * p.n + n0 + c) = v;
    }
    if (p.publish.mode != kPublishNone && uc.m < p.publish.tiles_m && uc.n < p.publish.tiles_n) {
      __syncthreads();  // every thread's stores of the tile precede thread 0's release
      if (threadIdx.x == 0) {
        __threadfence_system();
        device::chaos_delay(p.publish.chaos_seed, uint32_t(uc.m * 7919 + uc.n));
        if (p.publish.mode == kPublishTileFlag) {
          const uint32_t value = p.publish.value_ptr != nullptr ? *p.publish.value_ptr : p.publish.value;
          device::st_release_sys(p.publish.flags + int64_t(uc.m) * p.publish.tiles_n + uc.n, value);
        } else {
          device::red_add_release_sys(p.publish.flags + uc.m, 1u);
        }
      }
    }
  }
  }  // items
}

template <ConfigId kConfig>
struct SkinnyShape {
  static constexpr ConfigShape kShape = config_shape(kConfig);
  static_assert(kShape.skinny, "not a skinny config");
  static constexpr int kTileM = kShape.tile_m;
  static constexpr int kTileN = kShape.tile_n;
  static constexpr int kU = kShape.tile_k / kSkinnyChunkK;
  static constexpr int kThreads = kTileN / kSkinnyRowsPerWarp * 32;
  static_assert(kShape.tile_k % kSkinnyChunkK == 0 && kShape.cluster_m == 1 && kShape.cluster_n == 1, "skinny shape");
};

template <DType kDType, ConfigId kConfig, GemmOutput kOutput>
constexpr auto skinny_entry() {
  using S = SkinnyShape<kConfig>;
  return &skinny_gemm_kernel<typename SkinnyElement<kDType>::type, S::kTileM, S::kTileN, S::kU,
                             kOutput == GemmOutput::kPartial>;
}

}  // namespace kernel

template <DType kDType, WeightLayout kLayout, ConfigId kConfig, GemmOutput kOutput>
KernelInfo sm90_skinny_prepare(int device) {
  static_assert(kLayout == WeightLayout::kNK, "the skinny kernels read B as [N, K] (K-major) only");
  using S = kernel::SkinnyShape<kConfig>;
  detail::DeviceGuard guard(device);
  auto entry = kernel::skinny_entry<kDType, kConfig, kOutput>();
  int blocks = 0;
  FLUX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, entry, S::kThreads, 0));
  int sms = 0;
  FLUX_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  cudaFuncAttributes attributes{};
  FLUX_CUDA_CHECK(cudaFuncGetAttributes(&attributes, entry));
  KernelInfo info;
  info.smem_bytes = static_cast<int64_t>(attributes.sharedSizeBytes);
  info.threads = S::kThreads;
  // "Clusters" of one CTA: the CTAs resident at once, capped at kSkinnyMaxCtasPerSm per SM (the split-K
  // candidates and the workspace bound count on at most that many items per wave).
  info.max_active_clusters = (blocks < kSkinnyMaxCtasPerSm ? blocks : kSkinnyMaxCtasPerSm) * sms;
  return info;
}

template <DType kDType, WeightLayout kLayout, ConfigId kConfig, GemmOutput kOutput>
void sm90_skinny_launch(const KernelLaunch& launch, cudaStream_t stream) {
  static_assert(kLayout == WeightLayout::kNK, "the skinny kernels read B as [N, K] (K-major) only");
  using S = kernel::SkinnyShape<kConfig>;
  constexpr bool kPartial = kOutput == GemmOutput::kPartial;
  const int splits = kPartial ? launch.splits : 1;
  FLUX_CHECK(splits >= 1 && launch.k % splits == 0 && (launch.k / splits) % 8 == 0 && launch.n % 8 == 0,
             "GEMM core: skinny config ", S::kShape.name, ": split-K ", splits, " with N = ", launch.n, ", K = ",
             launch.k, " (expected N, K and K / splits multiples of 8)");
  FLUX_CHECK(!kPartial || (launch.workspace != nullptr && launch.publish.mode == kernel::kPublishNone),
             "GEMM core: a split-K launch needs a workspace and publishes from the reduction, not the GEMM");
  FLUX_CHECK(launch.order.unit_rows == S::kTileM, "GEMM core: skinny config ", S::kShape.name,
             " got a tile order for ", launch.order.unit_rows, "-row units (expected ", S::kTileM, ")");
  KernelLaunch params = launch;
  params.splits = splits;
  const int64_t items = launch.order.total_units() * splits;
  const int64_t grid = launch.num_clusters < items ? launch.num_clusters : items;
  FLUX_CHECK(grid >= 1, "GEMM core: skinny config ", S::kShape.name, ": a grid of ", launch.num_clusters, " CTAs for ",
             items, " work items (expected >= 1)");
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(grid), 1, 1);
  config.blockDim = dim3(S::kThreads, 1, 1);
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  if (launch.programmatic) {
    config.attrs = &attribute;
    config.numAttrs = 1;
  }
  FLUX_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel::skinny_entry<kDType, kConfig, kOutput>(), params));
  FLUX_CUDA_CHECK_LAUNCH(S::kShape.name);
}

}  // namespace flux::gemm
