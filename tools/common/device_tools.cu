// tools/common/device_tools.cu — see device_tools.h.
#include "tools/common/device_tools.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <sstream>

#include "src/common/check.h"

namespace flux::tools {

namespace {

__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

template <>
__device__ __forceinline__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) {
  return __nv_fp8_e4m3(v);  // round to nearest even, saturating at +-448
}
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}

__device__ __forceinline__ double to_double(__nv_bfloat16 v) { return static_cast<double>(__bfloat162float(v)); }
__device__ __forceinline__ double to_double(__half v) { return static_cast<double>(__half2float(v)); }
__device__ __forceinline__ double to_double(__nv_fp8_e4m3 v) { return static_cast<double>(float(v)); }

template <class T>
__global__ void fill_random_kernel(T* data, int64_t count, uint64_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t h = mix64(seed * 0x9e3779b97f4a7c15ull + uint64_t(i));
    float u = float(h >> 40) * (1.0f / float(1ull << 24));  // [0, 1)
    data[i] = from_float<T>((2.0f * u - 1.0f) * scale);
  }
}

__global__ void delay_kernel(uint64_t ns) {
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

__global__ void poison_kernel(uint16_t* data, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    data[i] = 0xFFFFu;
  }
}

// Block: 256 columns x kRowsPerBlock rows; K in chunks of kChunk through shared memory.
constexpr int kRefCols = 256;
constexpr int kRowsPerBlock = 8;
constexpr int kChunk = 16;  // s_b: 16 x 257 doubles = 33 KB of static shared memory

// FP8 inputs also take scales: out = acc * sa * sb + bias, sa = scale_a[row or 0], sb = scale_b[col or 0]
// (scale_a null: no scales).
template <class T, class TOut, bool kNK>
__global__ void reference_rows_kernel(int64_t n, int64_t k, const T* a, const T* b, const TOut* bias,
                                      const float* scale_a, const float* scale_b, bool scale_vectors,
                                      const int32_t* rows, int64_t num_rows, double* out) {
  __shared__ double s_a[kRowsPerBlock][kChunk];
  __shared__ double s_b[kChunk][kRefCols + 1];
  const int64_t col0 = int64_t(blockIdx.x) * kRefCols;
  const int64_t r0 = int64_t(blockIdx.y) * kRowsPerBlock;
  const int t = threadIdx.x;
  double acc[kRowsPerBlock];
#pragma unroll
  for (int r = 0; r < kRowsPerBlock; ++r) acc[r] = 0.0;

  for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
    for (int i = t; i < kRowsPerBlock * kChunk; i += blockDim.x) {
      int r = i / kChunk, kk = i % kChunk;
      double v = 0.0;
      if (r0 + r < num_rows && k0 + kk < k) v = to_double(a[int64_t(rows[r0 + r]) * k + k0 + kk]);
      s_a[r][kk] = v;
    }
    for (int i = t; i < kChunk * kRefCols; i += blockDim.x) {
      int kk, c;
      if (kNK) {  // B [n, k]: consecutive threads walk k within a column
        kk = i % kChunk;
        c = i / kChunk;
      } else {  // B [k, n]: consecutive threads walk n within a row
        c = i % kRefCols;
        kk = i / kRefCols;
      }
      double v = 0.0;
      int64_t col = col0 + c, kidx = k0 + kk;
      if (col < n && kidx < k) v = to_double(kNK ? b[col * k + kidx] : b[kidx * n + col]);
      s_b[kk][c] = v;
    }
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < kChunk; ++kk) {
      double bv = s_b[kk][t];
#pragma unroll
      for (int r = 0; r < kRowsPerBlock; ++r) acc[r] += s_a[r][kk] * bv;
    }
    __syncthreads();
  }
  int64_t col = col0 + t;
  if (col >= n) return;
  double bv = bias ? to_double(bias[col]) : 0.0;
  const double sb = scale_b ? double(scale_b[scale_vectors ? col : 0]) : 1.0;
#pragma unroll
  for (int r = 0; r < kRowsPerBlock; ++r) {
    if (r0 + r >= num_rows) continue;
    const double sa = scale_a ? double(scale_a[scale_vectors ? rows[r0 + r] : 0]) : 1.0;
    out[(r0 + r) * n + col] = acc[r] * sa * sb + bv;
  }
}

// Per row: sum (out - ref)^2, sum ref^2, non-finite count. One block per row.
template <class T>
__global__ void compare_rows_kernel(int64_t n, const T* c, const int32_t* rows, const double* ref, double* err2,
                                    double* ref2, unsigned long long* nonfinite) {
  const int64_t r = blockIdx.x;
  const T* row = c + int64_t(rows[r]) * n;
  double e = 0.0, s = 0.0;
  unsigned long long bad = 0;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    double v = to_double(row[j]);
    double want = ref[r * n + j];
    if (!isfinite(v)) {
      ++bad;
      continue;
    }
    e += (v - want) * (v - want);
    s += want * want;
  }
  __shared__ double se[256], ss[256];
  __shared__ unsigned long long sb[256];
  se[threadIdx.x] = e;
  ss[threadIdx.x] = s;
  sb[threadIdx.x] = bad;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      se[threadIdx.x] += se[threadIdx.x + w];
      ss[threadIdx.x] += ss[threadIdx.x + w];
      sb[threadIdx.x] += sb[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    err2[r] = se[0];
    ref2[r] = ss[0];
    nonfinite[r] = sb[0];
  }
}

int grid_for(int64_t count) {
  int64_t blocks = (count + 255) / 256;
  return static_cast<int>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

}  // namespace

DeviceBuffer::DeviceBuffer(size_t n) : bytes(n) { FLUX_CUDA_CHECK(cudaMalloc(&ptr, n > 0 ? n : 16)); }
DeviceBuffer::~DeviceBuffer() {
  if (ptr) cudaFree(ptr);
}

namespace {
// The tools' kernels are written for the 16-bit types the library runs today.
void check_16bit(DType dtype, const char* what) {
  FLUX_CHECK_ARG(dtype == DType::kBF16 || dtype == DType::kFP16, "flux tools: ", what, " for dtype ", to_string(dtype),
                 " (expected bf16 or fp16)");
}

__global__ void fill_scales_kernel(float* data, int64_t count, uint64_t seed, float lo, float hi) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t h = mix64(seed * 0x9e3779b97f4a7c15ull + uint64_t(i));
    float u = float(h >> 40) * (1.0f / float(1ull << 24));  // [0, 1)
    data[i] = lo + (hi - lo) * u;
  }
}
}  // namespace

void fill_random(void* data, int64_t count, DType dtype, uint64_t seed, float scale, cudaStream_t stream) {
  switch (dtype) {
    case DType::kBF16:
      fill_random_kernel<<<grid_for(count), 256, 0, stream>>>(static_cast<__nv_bfloat16*>(data), count, seed, scale);
      break;
    case DType::kFP16:
      fill_random_kernel<<<grid_for(count), 256, 0, stream>>>(static_cast<__half*>(data), count, seed, scale);
      break;
    case DType::kE4M3:
      fill_random_kernel<<<grid_for(count), 256, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(data), count, seed, scale);
      break;
    case DType::kFP32:
      fill_random_kernel<<<grid_for(count), 256, 0, stream>>>(static_cast<float*>(data), count, seed, scale);
      break;
    default:
      throw InvalidArgument(detail::cat("flux tools: fill_random for dtype ", to_string(dtype)));
  }
  FLUX_CUDA_CHECK_LAUNCH("fill_random_kernel");
}

void fill_scales(float* data, int64_t count, uint64_t seed, float lo, float hi, cudaStream_t stream) {
  fill_scales_kernel<<<grid_for(count), 256, 0, stream>>>(data, count, seed, lo, hi);
  FLUX_CUDA_CHECK_LAUNCH("fill_scales_kernel");
}

void poison(void* data, int64_t count, cudaStream_t stream) {
  poison_kernel<<<grid_for(count), 256, 0, stream>>>(static_cast<uint16_t*>(data), count);
  FLUX_CUDA_CHECK_LAUNCH("poison_kernel");
}

void gpu_delay(uint64_t ns, cudaStream_t stream) {
  delay_kernel<<<1, 1, 0, stream>>>(ns);
  FLUX_CUDA_CHECK_LAUNCH("delay_kernel");
}

void reference_gemm_rows(DType dtype, WeightLayout layout, int64_t n, int64_t k, const void* a, const void* b,
                         const void* bias, const int32_t* rows, int64_t num_rows, double* out, cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>((n + kRefCols - 1) / kRefCols),
            static_cast<unsigned>((num_rows + kRowsPerBlock - 1) / kRowsPerBlock));
  check_16bit(dtype, "reference_gemm_rows");
  const bool nk = layout == WeightLayout::kNK;
#define FLUX_REF_LAUNCH(T, NK)                                                                            \
  reference_rows_kernel<T, T, NK><<<grid, kRefCols, 0, stream>>>(                                         \
      n, k, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<const T*>(bias), nullptr, nullptr, \
      false, rows, num_rows, out)
  if (dtype == DType::kBF16) {
    if (nk) FLUX_REF_LAUNCH(__nv_bfloat16, true); else FLUX_REF_LAUNCH(__nv_bfloat16, false);
  } else {
    if (nk) FLUX_REF_LAUNCH(__half, true); else FLUX_REF_LAUNCH(__half, false);
  }
#undef FLUX_REF_LAUNCH
  FLUX_CUDA_CHECK_LAUNCH("reference_rows_kernel");
}

void reference_fp8_gemm_rows(DType out_dtype, int64_t n, int64_t k, const void* a, const void* b, const void* bias,
                             const float* scale_a, const float* scale_b, bool scale_vectors, const int32_t* rows,
                             int64_t num_rows, double* out, cudaStream_t stream) {
  check_16bit(out_dtype, "reference_fp8_gemm_rows output");
  FLUX_CHECK_ARG(scale_a != nullptr && scale_b != nullptr, "flux tools: reference_fp8_gemm_rows needs both scales");
  dim3 grid(static_cast<unsigned>((n + kRefCols - 1) / kRefCols),
            static_cast<unsigned>((num_rows + kRowsPerBlock - 1) / kRowsPerBlock));
  const auto* a8 = static_cast<const __nv_fp8_e4m3*>(a);
  const auto* b8 = static_cast<const __nv_fp8_e4m3*>(b);
  if (out_dtype == DType::kBF16) {
    reference_rows_kernel<__nv_fp8_e4m3, __nv_bfloat16, true><<<grid, kRefCols, 0, stream>>>(
        n, k, a8, b8, static_cast<const __nv_bfloat16*>(bias), scale_a, scale_b, scale_vectors, rows, num_rows, out);
  } else {
    reference_rows_kernel<__nv_fp8_e4m3, __half, true><<<grid, kRefCols, 0, stream>>>(
        n, k, a8, b8, static_cast<const __half*>(bias), scale_a, scale_b, scale_vectors, rows, num_rows, out);
  }
  FLUX_CUDA_CHECK_LAUNCH("reference_rows_kernel (fp8)");
}

CompareResult compare_rows(DType dtype, int64_t n, const void* c, const int32_t* rows, int64_t num_rows,
                           const double* ref, cudaStream_t stream) {
  check_16bit(dtype, "compare_rows");
  double* d_err = nullptr;
  FLUX_CUDA_CHECK(cudaMalloc(&d_err, sizeof(double) * 2 * num_rows + sizeof(unsigned long long) * num_rows));
  double* d_ref2 = d_err + num_rows;
  auto* d_bad = reinterpret_cast<unsigned long long*>(d_ref2 + num_rows);
  if (dtype == DType::kBF16) {
    compare_rows_kernel<<<static_cast<unsigned>(num_rows), 256, 0, stream>>>(
        n, static_cast<const __nv_bfloat16*>(c), rows, ref, d_err, d_ref2, d_bad);
  } else {
    compare_rows_kernel<<<static_cast<unsigned>(num_rows), 256, 0, stream>>>(n, static_cast<const __half*>(c), rows,
                                                                             ref, d_err, d_ref2, d_bad);
  }
  cudaError_t launch = cudaGetLastError();
  std::vector<double> err(static_cast<size_t>(num_rows)), ref2(static_cast<size_t>(num_rows));
  std::vector<unsigned long long> bad(static_cast<size_t>(num_rows));
  cudaError_t sync = cudaStreamSynchronize(stream);
  if (launch == cudaSuccess && sync == cudaSuccess) {
    sync = cudaMemcpy(err.data(), d_err, sizeof(double) * num_rows, cudaMemcpyDeviceToHost);
    if (sync == cudaSuccess) sync = cudaMemcpy(ref2.data(), d_ref2, sizeof(double) * num_rows, cudaMemcpyDeviceToHost);
    if (sync == cudaSuccess) {
      sync = cudaMemcpy(bad.data(), d_bad, sizeof(unsigned long long) * num_rows, cudaMemcpyDeviceToHost);
    }
  }
  cudaFree(d_err);
  FLUX_CUDA_CHECK(launch);
  FLUX_CUDA_CHECK(sync);
  CompareResult result;
  double e_all = 0.0, s_all = 0.0;
  for (int64_t r = 0; r < num_rows; ++r) {
    result.nonfinite += static_cast<int64_t>(bad[r]);
    e_all += err[r];
    s_all += ref2[r];
    double rel = ref2[r] > 0.0 ? std::sqrt(err[r] / ref2[r]) : std::sqrt(err[r]);
    if (bad[r] > 0) rel = INFINITY;
    if (result.worst_row < 0 || rel > result.max_row_rel) {
      result.max_row_rel = rel;
      result.worst_row = r;
    }
  }
  result.checked = num_rows * n;
  result.global_rel = s_all > 0.0 ? std::sqrt(e_all / s_all) : std::sqrt(e_all);
  if (result.nonfinite > 0) result.global_rel = INFINITY;
  return result;
}

double tolerance(DType dtype) {
  check_16bit(dtype, "tolerance");
  return dtype == DType::kBF16 ? 1e-2 : 5e-3;
}

std::string describe(const CompareResult& r) {
  std::ostringstream out;
  out << "checked " << r.checked << " elements: max row rel err " << r.max_row_rel << " (row #" << r.worst_row
      << "), global rel err " << r.global_rel << ", non-finite/unwritten " << r.nonfinite;
  return out.str();
}

}  // namespace flux::tools
