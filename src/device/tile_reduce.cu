// src/device/tile_reduce.cu — see tile_reduce.h.
#include "src/device/tile_reduce.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "flux/tile_order.h"
#include "src/common/check.h"
#include "src/device/signal.cuh"

namespace flux::device {

namespace {

// One CTA of 1024 threads per SM (register budget forces one per SM), so reduce_sms CTAs take exactly
// reduce_sms SMs and leave the GEMM its own. Each thread keeps kUnroll 16-byte loads in flight: the
// reduction is bandwidth work and a first version with one load per thread (256 threads x 8 SMs) ran
// latency-bound at ~30 GB/s (two ranks on one H200: the fused path took 2x the sequential one).
constexpr int kThreads = 1024;
constexpr int kUnroll = 2;  // the reduction: 2 x 16 B x 1024 threads = one 128 x 128 bf16 tile per CTA at a time
// The two-shot gather copies whole segments: 8 loads per thread in flight (128 KB per SM; Little's law as
// the AG gather, src/device/block_gather.h). The reduction is bounded by its tile: one 32 KB tile per CTA
// between flag waits, so more loads per thread would not add bytes in flight there; raising it needs
// several tiles per CTA at a time (not yet done).
constexpr int kGatherUnroll = 8;
constexpr int kVec = 8;  // elements per 16-byte access

template <class T>
__device__ __forceinline__ void to_float8(const uint4& v, float (&f)[kVec]);
template <>
__device__ __forceinline__ void to_float8<__nv_bfloat16>(const uint4& v, float (&f)[kVec]) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 x = __bfloat1622float2(h[i]);
    f[2 * i] = x.x;
    f[2 * i + 1] = x.y;
  }
}
template <>
__device__ __forceinline__ void to_float8<__half>(const uint4& v, float (&f)[kVec]) {
  const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 x = __half22float2(h[i]);
    f[2 * i] = x.x;
    f[2 * i + 1] = x.y;
  }
}

template <class T>
__device__ __forceinline__ uint4 from_float8(const float (&f)[kVec]);
template <>
__device__ __forceinline__ uint4 from_float8<__nv_bfloat16>(const float (&f)[kVec]) {
  uint4 v;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  return v;
}
template <>
__device__ __forceinline__ uint4 from_float8<__half>(const float (&f)[kVec]) {
  uint4 v;
  __half2* h = reinterpret_cast<__half2*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(f[2 * i], f[2 * i + 1]);
  return v;
}

// One 16-byte vector of one tile row: acc / out update for step t (see the header for the order).
template <class T>
__device__ __forceinline__ void reduce_vec(const RsReduceParams& p, const uint4& raw, int64_t row, int64_t col,
                                           int64_t seg0, int32_t t) {
  float v[kVec];
  to_float8<T>(raw, v);
  float* a = p.acc + (row - seg0) * p.n + col;
  if (t == 0) {
    reinterpret_cast<float4*>(a)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(a)[1] = make_float4(v[4], v[5], v[6], v[7]);
    return;
  }
  float4 a0 = reinterpret_cast<const float4*>(a)[0], a1 = reinterpret_cast<const float4*>(a)[1];
  float sum[kVec] = {a0.x + v[0], a0.y + v[1], a0.z + v[2], a0.w + v[3], a1.x + v[4], a1.y + v[5], a1.z + v[6], a1.w + v[7]};
  if (t < p.world - 1) {
    reinterpret_cast<float4*>(a)[0] = make_float4(sum[0], sum[1], sum[2], sum[3]);
    reinterpret_cast<float4*>(a)[1] = make_float4(sum[4], sum[5], sum[6], sum[7]);
    return;
  }
  if (p.bias) {
    float bv[kVec];
    to_float8<T>(*reinterpret_cast<const uint4*>(static_cast<const T*>(p.bias) + col), bv);
#pragma unroll
    for (int k = 0; k < kVec; ++k) sum[k] += bv[k];
  }
  const int64_t out_ld = p.out_ld > 0 ? p.out_ld : p.n;
  *reinterpret_cast<uint4*>(static_cast<T*>(p.out) + (row - seg0) * out_ld + col) = from_float8<T>(sum);
}

template <class T>
__global__ void __launch_bounds__(kThreads, 1) gemm_rs_reduce_kernel(RsReduceParams p) {
  const RowSegments segments{p.m, p.segment_rows};
  const int64_t seg0 = segments.begin(p.rank), seg1 = segments.end(p.rank);
  if (seg1 <= seg0) return;
  const int32_t i0 = int32_t(seg0 / p.tile_m), i1 = int32_t((seg1 - 1) / p.tile_m);  // inclusive tile rows
  const uint32_t epoch = *p.epoch;
  for (int32_t b = p.band_begin; b < p.band_end; ++b) {
    const int32_t uc0 = int32_t(int64_t(b) * p.units_n / p.col_bands);
    const int32_t uc1 = int32_t(int64_t(b + 1) * p.units_n / p.col_bands);
    const int32_t j0 = uc0 * p.cluster_n;
    const int32_t j1 = uc1 * p.cluster_n < p.tiles_n ? uc1 * p.cluster_n : p.tiles_n;
    if (j1 <= j0) continue;
    const int32_t band_cols = j1 - j0;
    const int64_t ntiles = int64_t(i1 - i0 + 1) * band_cols;
    for (int32_t t = 0; t < p.world; ++t) {
      const int32_t s = (p.rank - 1 - t + 2 * p.world) % p.world;  // t = world - 1: s = rank
      const T* src = static_cast<const T*>(p.partials[s]) + p.partial_offset;
      for (int64_t q = blockIdx.x; q < ntiles; q += gridDim.x) {
        const int32_t i = i0 + int32_t(q / band_cols), j = j0 + int32_t(q % band_cols);
        if (threadIdx.x == 0) {
          chaos_delay(p.ctx.chaos_seed, uint32_t(q) * 131u + uint32_t(t));
          WaitContext ctx = p.ctx;
          ctx.peer = s;
          const int32_t tile = i * p.tiles_n + j;
          // A timeout is recorded in ctx.status (rank, peer s, tile) and the kernel carries on.
          wait_flag_geq(p.flags[s] + p.flag_offset + tile, epoch, tile, ctx);
        }
        __syncthreads();
        const int64_t r0 = int64_t(i) * p.tile_m > seg0 ? int64_t(i) * p.tile_m : seg0;
        const int64_t r1 = int64_t(i + 1) * p.tile_m < seg1 ? int64_t(i + 1) * p.tile_m : seg1;
        const int64_t c0 = int64_t(j) * p.tile_n;
        const int64_t c1 = c0 + p.tile_n < p.n ? c0 + p.tile_n : p.n;
        const int64_t nvec = (c1 - c0) / kVec;
        const int64_t total = (r1 - r0) * nvec;
        // kUnroll independent loads first, then the arithmetic: bandwidth, not latency.
        for (int64_t e0 = threadIdx.x; e0 < total; e0 += int64_t(kThreads) * kUnroll) {
          uint4 raw[kUnroll];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const int64_t e = e0 + int64_t(u) * kThreads;
            if (e < total) {
              const int64_t row = r0 + e / nvec, col = c0 + (e % nvec) * kVec;
              raw[u] = *reinterpret_cast<const uint4*>(src + row * p.n + col);
            }
          }
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const int64_t e = e0 + int64_t(u) * kThreads;
            if (e < total) reduce_vec<T>(p, raw[u], r0 + e / nvec, c0 + (e % nvec) * kVec, seg0, t);
          }
        }
        __syncthreads();  // this tile is done before thread 0 waits for the next
      }
    }
  }
}

__global__ void fill_flags_kernel(uint32_t* flags, int64_t count, const uint32_t* epoch_ptr) {
  const uint32_t epoch = *epoch_ptr;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    st_release_sys(flags + i, epoch);
  }
}

__global__ void __launch_bounds__(kThreads, 1) ar_gather_kernel(ArGatherParams p) {
  const uint32_t epoch = *p.epoch;
  const RowSegments segments{p.m, p.segment_rows};
  const int64_t row_bytes = p.n * p.elem_bytes;
  const int64_t stride = int64_t(gridDim.x) * kThreads;
  for (int32_t t = 0; t < p.world; ++t) {
    const int32_t s = (p.rank + t) % p.world;
    const int64_t r0 = segments.begin(s), r1 = segments.end(s);
    if (r1 <= r0) continue;
    if (threadIdx.x == 0) {
      chaos_delay(p.ctx.chaos_seed, uint32_t(blockIdx.x) * 37u + uint32_t(t));
      WaitContext ctx = p.ctx;
      ctx.peer = s;
      // A timeout is recorded in ctx.status (rank, peer s, the flag) and the kernel carries on.
      wait_flag_geq(p.flags[s] + p.flag_index, epoch, int32_t(p.flag_index), ctx);
    }
    __syncthreads();
    const uint4* src = reinterpret_cast<const uint4*>(static_cast<const char*>(p.reduced[s]) + r0 * row_bytes);
    uint4* dst = reinterpret_cast<uint4*>(static_cast<char*>(p.out) + r0 * row_bytes);
    const int64_t vecs = (r1 - r0) * row_bytes / 16;
    // kUnroll independent 16-byte loads per thread before the stores (bytes in flight, as the reduction).
    for (int64_t v0 = int64_t(blockIdx.x) * kThreads + threadIdx.x; v0 < vecs; v0 += stride * kGatherUnroll) {
      uint4 x[kGatherUnroll];
#pragma unroll
      for (int u = 0; u < kGatherUnroll; ++u) {
        if (v0 + u * stride < vecs) x[u] = src[v0 + u * stride];
      }
#pragma unroll
      for (int u = 0; u < kGatherUnroll; ++u) {
        if (v0 + u * stride < vecs) dst[v0 + u * stride] = x[u];
      }
    }
  }
}

}  // namespace

void launch_ar_gather(const ArGatherParams& params, int ctas, cudaStream_t stream) {
  FLUX_CHECK(params.world >= 2 && params.segment_rows >= 1 && (params.n * params.elem_bytes) % 16 == 0 && ctas >= 1,
             "gemm_ar gather: world ", params.world, " segment_rows ", params.segment_rows, " n ", params.n, " ctas ", ctas);
  ar_gather_kernel<<<ctas, kThreads, 0, stream>>>(params);
  FLUX_CUDA_CHECK_LAUNCH("ar_gather_kernel");
}

void launch_gemm_rs_reduce(DType dtype, const RsReduceParams& params, int ctas, cudaStream_t stream) {
  FLUX_CHECK(params.world >= 2 && params.tile_n % kVec == 0 && params.n % kVec == 0,
             "gemm_rs reduce: world ", params.world, " tile_n ", params.tile_n, " n ", params.n);
  if (dtype == DType::kBF16) {
    gemm_rs_reduce_kernel<__nv_bfloat16><<<ctas, kThreads, 0, stream>>>(params);
  } else {
    gemm_rs_reduce_kernel<__half><<<ctas, kThreads, 0, stream>>>(params);
  }
  FLUX_CUDA_CHECK_LAUNCH("gemm_rs_reduce_kernel");
}

void launch_fill_flags(uint32_t* flags, int64_t count, const uint32_t* epoch, cudaStream_t stream) {
  int blocks = static_cast<int>(count / 256 + 1 < 1024 ? count / 256 + 1 : 1024);
  fill_flags_kernel<<<blocks, 256, 0, stream>>>(flags, count, epoch);
  FLUX_CUDA_CHECK_LAUNCH("fill_flags_kernel");
}

}  // namespace flux::device
