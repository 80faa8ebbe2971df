// src/gemm/kernel/split_k_reduce.cu — see src/gemm/split_k_reduce.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "src/common/check.h"
#include "src/common/device_guard.h"
#include "src/device/half_convert.cuh"
#include "src/device/signal.cuh"
#include "src/gemm/split_k_reduce.h"

namespace flux::gemm {
namespace {

constexpr int kThreads = 256;
constexpr int kVec = 4;  // fp32 partials per 16-byte load; N is a multiple of 8

__device__ __forceinline__ uint32_t atom_add_acq_rel_gpu(uint32_t* p, uint32_t v) {
  uint32_t old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

// blockIdx.x: tile column j, blockIdx.y: tile row i, blockIdx.z: chunk of rows_per_cta rows in the tile.
template <class T>
__global__ void __launch_bounds__(kThreads) split_k_reduce_kernel(SplitKReduceLaunch p, int32_t rows_per_cta) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const int64_t i = blockIdx.y, j = blockIdx.x;
  const int64_t r0 = i * p.tile_m + int64_t(blockIdx.z) * rows_per_cta;
  const int64_t tile_r1 = i * p.tile_m + p.tile_m < p.m ? i * p.tile_m + p.tile_m : p.m;
  const int64_t r1 = r0 + rows_per_cta < tile_r1 ? r0 + rows_per_cta : tile_r1;
  const int64_t c0 = j * p.tile_n;
  const int64_t c1 = c0 + p.tile_n < p.n ? c0 + p.tile_n : p.n;
  const int64_t nvec = (c1 - c0) / kVec;
  const int64_t total = r1 > r0 ? (r1 - r0) * nvec : 0;
  const int64_t slice = p.m * p.n;
  const T* bias = static_cast<const T*>(p.bias);
  T* c = static_cast<T*>(p.c);
  for (int64_t e = threadIdx.x; e < total; e += kThreads) {
    const int64_t row = r0 + e / nvec, col = c0 + (e % nvec) * kVec;
    const float* src = p.workspace + row * p.n + col;
    float acc[kVec] = {0.f, 0.f, 0.f, 0.f};
    // Slice order is the summation order: ((p0 + p1) + p2) + ... The loads are independent (the
    // compiler issues a batch of them before the adds), the adds are not reordered.
#pragma unroll 8
    for (int32_t s = 0; s < p.splits; ++s) {
      const float4 v = __ldcs(reinterpret_cast<const float4*>(src + s * slice));
      acc[0] += v.x;
      acc[1] += v.y;
      acc[2] += v.z;
      acc[3] += v.w;
    }
    if (p.scale_a != nullptr) {  // FP8: (sum x sa) x sb, as the FP8 kernels' epilogue
      const float sa = __ldg(p.scale_a + (p.scale_vectors ? row : 0));
#pragma unroll
      for (int q = 0; q < kVec; ++q) acc[q] = (acc[q] * sa) * __ldg(p.scale_b + (p.scale_vectors ? col + q : 0));
    }
    if (bias != nullptr) {
#pragma unroll
      for (int q = 0; q < kVec; ++q) acc[q] += device::to_float<T>(bias[col + q]);
    }
    device::store4<T>(c + row * p.n + col, acc);
  }
  if (p.publish.mode == kernel::kPublishNone) return;
  __syncthreads();  // every thread's stores of this chunk precede thread 0's arrival
  if (threadIdx.x != 0 || i >= p.publish.tiles_m || j >= p.publish.tiles_n) return;
  __threadfence();
  uint32_t* arrival = p.arrivals + i * p.publish.tiles_n + j;
  if (atom_add_acq_rel_gpu(arrival, 1u) + 1u != gridDim.z) return;
  // The last chunk of the tile: every chunk's stores happen before this (acq_rel chain). No other CTA
  // touches the counter again in this call: reset it for the next call (stream-ordered after this
  // kernel), then publish.
  *arrival = 0u;
  __threadfence_system();
  device::chaos_delay(p.publish.chaos_seed, uint32_t(i * 7919 + j));
  if (p.publish.mode == kernel::kPublishTileFlag) {
    const uint32_t value = p.publish.value_ptr != nullptr ? *p.publish.value_ptr : p.publish.value;
    device::st_release_sys(p.publish.flags + i * p.publish.tiles_n + j, value);
  } else {
    device::red_add_release_sys(p.publish.flags + i, 1u);
  }
}

}  // namespace

int32_t split_k_reduce_rows_per_cta(int32_t tile_n) { return tile_n >= 4 * kVec ? kThreads * kVec / tile_n : 1; }

void prepare_split_k_reduce(int device) {
  detail::DeviceGuard guard(device);
  cudaFuncAttributes attributes{};
  FLUX_CUDA_CHECK(cudaFuncGetAttributes(&attributes, &split_k_reduce_kernel<__nv_bfloat16>));
  FLUX_CUDA_CHECK(cudaFuncGetAttributes(&attributes, &split_k_reduce_kernel<__half>));
}

void launch_split_k_reduce(const SplitKReduceLaunch& p, cudaStream_t stream) {
  FLUX_CHECK(p.splits >= 1 && p.m >= 1 && p.n % 8 == 0 && p.tile_n % kVec == 0 && p.tile_m >= 1 &&
                 p.workspace != nullptr && p.c != nullptr && (p.scale_a == nullptr) == (p.scale_b == nullptr) &&
                 (p.dtype == DType::kBF16 || p.dtype == DType::kFP16) &&
                 (p.publish.mode == kernel::kPublishNone || p.arrivals != nullptr),
             "split-K reduce: bad launch (m ", p.m, " n ", p.n, " splits ", p.splits, " tile ", p.tile_m, "x", p.tile_n,
             ")");
  const int32_t rows = split_k_reduce_rows_per_cta(p.tile_n);
  const int64_t tile_rows = p.m < p.tile_m ? p.m : p.tile_m;  // rows of the tallest tile row
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>((p.n + p.tile_n - 1) / p.tile_n),
                        static_cast<unsigned>((p.m + p.tile_m - 1) / p.tile_m),
                        static_cast<unsigned>((tile_rows + rows - 1) / rows));
  config.blockDim = dim3(kThreads, 1, 1);
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  if (p.dtype == DType::kBF16) {
    FLUX_CUDA_CHECK(cudaLaunchKernelEx(&config, &split_k_reduce_kernel<__nv_bfloat16>, p, rows));
  } else {
    FLUX_CUDA_CHECK(cudaLaunchKernelEx(&config, &split_k_reduce_kernel<__half>, p, rows));
  }
  FLUX_CUDA_CHECK_LAUNCH("split_k_reduce_kernel");
}

}  // namespace flux::gemm
