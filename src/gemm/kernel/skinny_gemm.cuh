// src/gemm/kernel/skinny_gemm.cuh — the GEMM core's decode kernels: C [M, N] = A [M, K] B[N, K]^T (+ bias)
// for M up to a few dozen rows, where the weight B is the whole cost (M = 1 is a GEMV bound by the bytes
// of B over HBM) and a warp-specialized TMA kernel's fixed cost (cluster launch, descriptor fetch,
// pipeline setup, ~8-10 us measured with ncu on the H200) is most of the call.
//
// Structure: a work item is an output tile (tile_m rows of M x 64 columns of N) and K slice; CTAs take
// items i, i + grid, ... (a grid of min(items, resident CTAs), or GemmOptions::max_sms CTAs, so a fused
// op's SM budget holds as for the persistent kernels); no clusters, no TMA. The CTA copies its rows of B
// and A into a 4-stage shared-memory pipeline with cp.async (16 bytes per copy, asynchronous, so the bytes
// in flight are the stages', not what the register allocator leaves: a first version loaded straight into
// registers and ptxas interleaved the loads with the MMAs, a few loads in flight per lane, 2.3 TB/s at
// best on the H200). Each pair of the 8 warps owns 16 rows of B (16 columns of C) and all rows of the tile,
// each warp of a pair half of every stage's K chunks, and multiplies with mma.sync m16n8k16 (fp32 accumulate), B as the instruction's 16-row A operand and the rows
// of A as its 8-column B operand (the same swap cuBLAS's decode kernels make, nvjet ..._64x8_...). The
// fragments need no shuffles: a dot product does not depend on the order of K, so each lane's 16-byte
// vector (8 consecutive k) is assigned to the k positions its fragment holds in two k16 steps (lane quad t,
// step s: physical k 8t + 4s + 0..3 are logical k 2t, 2t+1, 2t+8, 2t+9), the same for both operands.
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
// FP8 (16x64x256_skinny_e4m3): the same kernel on e4m3 A and B with mma.sync m16n8k32 (a 16-byte vector is 16 of K,
// so a stage of 256 is the 16-bit kernel's 256 bytes per row); C = (acc x sa) x sb + bias as the FP8 CUTLASS kernels'
// epilogue, and the partial kernel writes unscaled sums that the split-K reduction scales.
// The family's GEMV config (ConfigShape::gemv, 8x16x512_gemv) shares the contract, the launcher and the item loop
// but has a kernel body of its own, without mma or shared memory: src/gemm/kernel/gemv_kernel.cuh.
// Assumptions: sm_90a, K-major weight (WeightLayout::kNK; the only layout compiled for this family),
// A/B/C/bias 16-byte aligned, N a multiple of 8, K (and K / splits) of 16 bytes (validated by the plan).
#pragma once

#include <cuda_runtime.h>

#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "src/common/check.h"
#include "src/common/device_guard.h"
#include "src/device/half_convert.cuh"
#include "src/device/signal.cuh"
#include "src/gemm/gemm_launch.h"
#include "src/gemm/kernel/cta_hooks.cuh"
#include "src/gemm/kernel/gemv_kernel.cuh"

namespace flux::gemm {
namespace kernel {

// K per 16-byte vector per lane quad: 4 lanes x 8 elements (bf16 / fp16: 32), x 16 (e4m3: 64).
template <class T>
constexpr int kSkinnyChunkK = 4 * 16 / int(sizeof(T));
constexpr int kSkinnyRowsPerWarp = 16;  // rows of B per warp: the m16 of mma.sync
// Warps per 16 rows of B: they split each stage's K chunks and add their accumulators in the epilogue
// (in a fixed order: bitwise reproducible). Two halve each warp's serial chain of loads and MMAs, which
// is what bounds the small problems (ncu at 8 x 7168 x 512 with one warp per 16 rows: 2,700 instructions
// per warp at ~4.5 cycles each, 9 us, DRAM 17% busy).
constexpr int kSkinnyKGroups = 2;

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
template <>
struct SkinnyElement<DType::kE4M3> {
  using type = __nv_fp8_e4m3;
};
template <>
struct SkinnyElement<DType::kFP32> {  // the FP8 partial kernels' output type (fp32 partials)
  using type = float;
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

// e4m3: m16n8k32, the same register pattern (a0..a3 of the 16-row operand, b0 b1 of the 8-column one) with four
// 8-bit elements per register where the 16-bit kinds have two: each lane's 16-byte vector (16 consecutive k) is
// two k32 steps' halves, assigned as the 16-bit kernels assign theirs (the same physical-to-logical k map for both
// operands, so the dot product is unchanged).
template <>
__device__ __forceinline__ void mma_16816<__nv_fp8_e4m3>(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronously (L1 bypassed); src_bytes 0 writes zeros (rows / K past the end).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}
__device__ __forceinline__ uint4 lds128(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}

// Shared-memory layout of one pipeline stage: kTileN rows of B then kTileM rows of A, each kTileK elements
// of K (kElemBytes each) plus 64 bytes of padding (a row stride of 4 mod 8 16-byte units: the 8 lanes of a
// 16-byte load phase, 2 rows x 4 quads, hit 8 different bank groups).
template <int kTileM, int kTileN, int kTileK, int kElemBytes>
struct SkinnySmem {
  static constexpr int kRowBytes = kTileK * kElemBytes + 64;
  static constexpr int kStageBytes = (kTileN + kTileM) * kRowBytes;
  static constexpr int kBytes = kSkinnyStages * kStageBytes;
  static_assert((kRowBytes / 16) % 8 == 4, "skinny smem row stride");
  static_assert(kTileM * (kTileN + 4) * 4 <= kBytes, "the epilogue tile reuses the pipeline's memory");
};

// kTileM rows of C (a multiple of 8), kTileN columns (16 per warp), kTileK of K per pipeline stage. A and B in T,
// C and bias in TOut (the 16-bit kernels: TOut = T). e4m3 (kScaled): C = (acc x sa) x sb + bias in fp32, sa per row
// of C and sb per column, or one scalar each (KernelLaunch::scale_vectors), as the FP8 CUTLASS kernels' epilogue;
// the partial kernels write the unscaled sums (the split-K reduction scales).
template <class T, class TOut, int kTileM, int kTileN, int kTileK, bool kPartial>
__global__ void __launch_bounds__(kTileN / kSkinnyRowsPerWarp * 32 * kSkinnyKGroups)
    skinny_gemm_kernel(const __grid_constant__ KernelLaunch p) {
  constexpr bool kScaled = sizeof(T) == 1;
  constexpr int kWarpsN = kTileN / kSkinnyRowsPerWarp;  // warps across the tile's columns
  constexpr int kThreads = kWarpsN * 32 * kSkinnyKGroups;
  constexpr int kJ = kTileM / 8;                      // n8 tiles of the instruction over the rows of A
  constexpr int kChunks = kTileK / kSkinnyChunkK<T>;  // 16-byte-per-lane K chunks per stage
  constexpr int kVecElems = 16 / int(sizeof(T));      // elements per 16-byte vector
  constexpr int kVecsPerRow = kTileK / kVecElems;     // 16-byte vectors per row per stage
  using Smem = SkinnySmem<kTileM, kTileN, kTileK, int(sizeof(T))>;
  static_assert(kTileM % 8 == 0 && kTileN % kSkinnyRowsPerWarp == 0 && kTileK % kSkinnyChunkK<T> == 0, "skinny tile");
  static_assert(kChunks % kSkinnyKGroups == 0, "the K groups split each stage's chunks evenly");
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t smem0 = smem_addr(smem);

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // The split-K reduction (a programmatic dependent) may be scheduled now; it waits for this grid's
  // completion itself (griddepcontrol.wait). This kernel never waits on the one before it.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int wn = warp % kWarpsN, kg = warp / kWarpsN;  // this warp's 16 columns, and its K group
  const int g = lane / 4, t = lane % 4;
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  const int64_t ks = p.k / p.splits;
  const int64_t items = p.order.total_units() * p.splits;

  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    if (item != int64_t(blockIdx.x)) __syncthreads();  // the previous item is done with shared memory
    const int64_t unit = item / p.splits;
    const int32_t slice = int32_t(item - unit * p.splits);
    const UnitCoord uc = p.order.unit_at(unit);
    const int64_t m0 = int64_t(uc.m) * kTileM, n0 = int64_t(uc.n) * kTileN;
    const int64_t kb = int64_t(slice) * ks, ke = kb + ks;
    const int rows = int(p.m - m0 < kTileM ? p.m - m0 : kTileM);
    const int jn = (rows + 7) / 8;  // n8 tiles holding real rows (warp-uniform)

    cta_wait_before_load(p.wait, uc.m);

    // Stage s of the K loop: B rows n0.., A rows m0.. (only the tile's real rows: a padding row of A
    // only feeds rows of C that are never stored), K [kb + s kTileK, + kTileK), zero past the ends.
    const int64_t stages = (ks + kTileK - 1) / kTileK;
    auto load_stage = [&](int64_t s, int slot) {
      const int64_t k0 = kb + s * kTileK;
      const uint32_t base = smem0 + uint32_t(slot * Smem::kStageBytes);
      for (int v = int(threadIdx.x); v < (kTileN + rows) * kVecsPerRow; v += kThreads) {
        const int r = v / kVecsPerRow, c = v - r * kVecsPerRow;
        const int64_t kk = k0 + c * kVecElems;
        const bool is_b = r < kTileN;
        const int64_t row = is_b ? n0 + r : m0 + (r - kTileN);
        const bool ok = kk < ke && (is_b ? row < p.n : row < p.m);
        const T* src = ok ? (is_b ? b : a) + row * p.k + kk : b;
        cp_async_16(base + uint32_t(r * Smem::kRowBytes + c * 16), src, ok ? 16 : 0);
      }
    };
#pragma unroll
    for (int s = 0; s < kSkinnyStages - 1; ++s) {
      if (s < stages) load_stage(s, s);
      cp_async_commit();
    }

    float acc[kJ][4];
#pragma unroll
    for (int j = 0; j < kJ; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
    const uint32_t w_off = uint32_t((wn * kSkinnyRowsPerWarp + g) * Smem::kRowBytes + t * 16 + kg * 64);
    const uint32_t a_off = uint32_t((kTileN + g) * Smem::kRowBytes + t * 16 + kg * 64);
    for (int64_t s = 0; s < stages; ++s) {
      cp_async_wait<kSkinnyStages - 2>();  // stage s has landed (for this thread's copies)
      __syncthreads();                     // ... for every thread's; and slot (s - 1) is free again
      if (s + kSkinnyStages - 1 < stages) load_stage(s + kSkinnyStages - 1, int((s + kSkinnyStages - 1) % kSkinnyStages));
      cp_async_commit();
      const uint32_t base = smem0 + uint32_t(int(s % kSkinnyStages) * Smem::kStageBytes);
#pragma unroll
      for (int i = 0; i < kChunks / kSkinnyKGroups; ++i) {  // chunks kg, kg + groups, ...
        const int u = i * kSkinnyKGroups;
        const uint4 w0 = lds128(base + w_off + uint32_t(u * 64));
        const uint4 w1 = lds128(base + w_off + uint32_t(8 * Smem::kRowBytes + u * 64));
        // Step 0: the first 8 bytes of each vector (16-bit: logical k 2t, 2t+1 | 2t+8, 2t+9; e4m3: 4t..4t+3 |
        // 4t+16..4t+19); step 1: the last 8.
#pragma unroll
        for (int j = 0; j < kJ; ++j) {
          if (j < jn) {
            const uint4 av = lds128(base + a_off + uint32_t(8 * j * Smem::kRowBytes + u * 64));
            mma_16816<T>(acc[j], w0.x, w1.x, w0.y, w1.y, av.x, av.y);
            mma_16816<T>(acc[j], w0.z, w1.z, w0.w, w1.w, av.z, av.w);
          }
        }
      }
    }
    cp_async_wait<0>();
    __syncthreads();  // every warp is done with the pipeline's memory: the epilogue tile reuses it

    // Fragment (j): lane (g, t) holds C[8j + 2t (+1)][16 wn + g (+8)] in acc[j][0..3]; K group 0 stores,
    // the next groups add theirs in turn (a fixed order).
    float(*tile)[kTileN + 4] = reinterpret_cast<float(*)[kTileN + 4]>(smem);
#pragma unroll
    for (int group = 0; group < kSkinnyKGroups; ++group) {
      if (kg == group) {
#pragma unroll
        for (int j = 0; j < kJ; ++j) {
          const int ml = 8 * j + 2 * t, nl = wn * kSkinnyRowsPerWarp + g;
          if (group == 0) {
            tile[ml][nl] = acc[j][0];
            tile[ml + 1][nl] = acc[j][1];
            tile[ml][nl + 8] = acc[j][2];
            tile[ml + 1][nl + 8] = acc[j][3];
          } else {
            tile[ml][nl] += acc[j][0];
            tile[ml + 1][nl] += acc[j][1];
            tile[ml][nl + 8] += acc[j][2];
            tile[ml + 1][nl + 8] += acc[j][3];
          }
        }
      }
      __syncthreads();
    }
    const int cols = int(p.n - n0 < kTileN ? p.n - n0 : kTileN);  // a multiple of 8
    if constexpr (kPartial) {
      float* dst = p.workspace + int64_t(slice) * p.m * p.n;
      const int per_row = cols / 4;
      for (int e = int(threadIdx.x); e < rows * per_row; e += kThreads) {
        const int r = e / per_row, c = (e - r * per_row) * 4;
        *reinterpret_cast<float4*>(dst + (m0 + r) * p.n + n0 + c) = *reinterpret_cast<const float4*>(&tile[r][c]);
      }
    } else {
      TOut* out = static_cast<TOut*>(p.c);
      const TOut* bias = static_cast<const TOut*>(p.bias);
      const int per_row = cols / 8;
      for (int e = int(threadIdx.x); e < rows * per_row; e += kThreads) {
        const int r = e / per_row, c = (e - r * per_row) * 8;
        float f[8];
#pragma unroll
        for (int q = 0; q < 8; ++q) f[q] = tile[r][c + q];
        if constexpr (kScaled) {
          const float sa = __ldg(p.scale_a + (p.scale_vectors ? m0 + r : 0));
#pragma unroll
          for (int q = 0; q < 8; ++q) f[q] = (f[q] * sa) * __ldg(p.scale_b + (p.scale_vectors ? n0 + c + q : 0));
        }
        if (bias != nullptr) {
          const uint4 bv = __ldg(reinterpret_cast<const uint4*>(bias + n0 + c));
          const TOut* bh = reinterpret_cast<const TOut*>(&bv);
#pragma unroll
          for (int q = 0; q < 8; ++q) f[q] += device::to_float<TOut>(bh[q]);
        }
        uint4 v;
        v.x = device::pack2<TOut>(f[0], f[1]);
        v.y = device::pack2<TOut>(f[2], f[3]);
        v.z = device::pack2<TOut>(f[4], f[5]);
        v.w = device::pack2<TOut>(f[6], f[7]);
        *reinterpret_cast<uint4*>(out + (m0 + r) * p.n + n0 + c) = v;
      }
      cta_publish_after_store(p.publish, uc);
    }
  }  // items
}

template <ConfigId kConfig, class T>
struct SkinnyShape {
  static constexpr ConfigShape kShape = config_shape(kConfig);
  static_assert(kShape.skinny, "not a skinny config");
  static constexpr bool kGemv = kShape.gemv;  // the GEMV kernel body (gemv_kernel.cuh): no shared memory
  static constexpr int kTileM = kShape.tile_m;
  static constexpr int kTileN = kShape.tile_n;
  static constexpr int kTileK = kShape.tile_k;
  static constexpr int kSmemBytes = kGemv ? 0 : SkinnySmem<kTileM, kTileN, kTileK, int(sizeof(T))>::kBytes;
  static constexpr int kThreads = kGemv ? kGemvThreads : kTileN / kSkinnyRowsPerWarp * 32 * kSkinnyKGroups;
  static_assert(kShape.tile_k % kSkinnyChunkK<T> == 0 && kShape.cluster_m == 1 && kShape.cluster_n == 1, "skinny shape");
  static_assert(kShape.fp8 == (sizeof(T) == 1), "the FP8 skinny configs run e4m3 inputs only, the others 16-bit ones");
  static_assert(!kGemv || (kTileM == kGemvTileM && kTileN == kGemvTileN), "GEMV shape (gemv_kernel.cuh)");
};

using SkinnyEntry = void (*)(KernelLaunch);

// The kernel for a call with m rows of A: the GEMV configs have one per rows-per-unit (1, 2, 4, 8: the
// registers and loads of A scale with it); the other skinny configs one.
template <DType kIn, DType kOut, ConfigId kConfig, GemmOutput kOutput>
SkinnyEntry skinny_entry(int64_t m) {
  using T = typename SkinnyElement<kIn>::type;
  using TOut = typename SkinnyElement<kOut>::type;
  using S = SkinnyShape<kConfig, T>;
  constexpr bool kPartial = kOutput == GemmOutput::kPartial;
  static_assert(kPartial || (sizeof(TOut) == 2 && (sizeof(T) == 1 || std::is_same_v<T, TOut>)),
                "C is bf16 / fp16: the input type, or either for e4m3 inputs");
  if constexpr (S::kGemv) {
    if (m <= 1) return &gemv_kernel<T, 1, kPartial>;
    if (m <= 2) return &gemv_kernel<T, 2, kPartial>;
    if (m <= 4) return &gemv_kernel<T, 4, kPartial>;
    return &gemv_kernel<T, 8, kPartial>;
  } else {
    return &skinny_gemm_kernel<T, TOut, S::kTileM, S::kTileN, S::kTileK, kPartial>;
  }
}

}  // namespace kernel

template <DType kIn, DType kOut, WeightLayout kLayout, ConfigId kConfig, GemmOutput kOutput>
KernelInfo sm90_skinny_prepare(int device) {
  static_assert(kLayout == WeightLayout::kNK, "the skinny kernels read B as [N, K] (K-major) only");
  using S = kernel::SkinnyShape<kConfig, typename kernel::SkinnyElement<kIn>::type>;
  detail::DeviceGuard guard(device);
  // Every kernel of the config (the GEMV: one per rows of A, 1, 2, 4, 8; the others: one); the residency is the
  // least of theirs.
  int blocks = 1 << 30;
  for (int64_t m = 1; m <= (S::kGemv ? kernel::kGemvTileM : 1); m *= 2) {
    auto entry = kernel::skinny_entry<kIn, kOut, kConfig, kOutput>(m);
    if (S::kSmemBytes > 0) {
      FLUX_CUDA_CHECK(cudaFuncSetAttribute(entry, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmemBytes));
    }
    int b = 0;
    FLUX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, entry, S::kThreads, S::kSmemBytes));
    blocks = b < blocks ? b : blocks;
  }
  int sms = 0;
  FLUX_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  KernelInfo info;
  info.smem_bytes = S::kSmemBytes;
  info.threads = S::kThreads;
  // "Clusters" of one CTA: the CTAs resident at once, capped at kSkinnyMaxCtasPerSm per SM (the split-K
  // candidates and the workspace bound count on at most that many items per wave).
  info.max_active_clusters = (blocks < kSkinnyMaxCtasPerSm ? blocks : kSkinnyMaxCtasPerSm) * sms;
  return info;
}

template <DType kIn, DType kOut, WeightLayout kLayout, ConfigId kConfig, GemmOutput kOutput>
void sm90_skinny_launch(const KernelLaunch& launch, cudaStream_t stream) {
  static_assert(kLayout == WeightLayout::kNK, "the skinny kernels read B as [N, K] (K-major) only");
  using S = kernel::SkinnyShape<kConfig, typename kernel::SkinnyElement<kIn>::type>;
  constexpr bool kPartial = kOutput == GemmOutput::kPartial;
  constexpr int kVecElems = 16 / int(sizeof(typename kernel::SkinnyElement<kIn>::type));
  const int splits = kPartial ? launch.splits : 1;
  FLUX_CHECK(splits >= 1 && launch.k % splits == 0 && (launch.k / splits) % kVecElems == 0 && launch.n % 8 == 0,
             "GEMM core: skinny config ", S::kShape.name, ": split-K ", splits, " with N = ", launch.n, ", K = ",
             launch.k, " (expected N a multiple of 8, K and K / splits multiples of ", kVecElems, ")");
  FLUX_CHECK(kPartial || !S::kShape.fp8 || (launch.scale_a != nullptr && launch.scale_b != nullptr),
             "GEMM core: skinny config ", S::kShape.name, ": an FP8 launch needs both scales");
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
  config.dynamicSmemBytes = S::kSmemBytes;
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  if (launch.programmatic) {
    config.attrs = &attribute;
    config.numAttrs = 1;
  }
  FLUX_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel::skinny_entry<kIn, kOut, kConfig, kOutput>(launch.m), params));
  FLUX_CUDA_CHECK_LAUNCH(S::kShape.name);
}

}  // namespace flux::gemm
