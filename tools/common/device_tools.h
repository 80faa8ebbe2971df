// tools/common/device_tools.h — device helpers shared by flux-bench and the GPU tests (not part of
// the library): random fills, output poisoning, an fp64 reference GEMM over chosen rows, and the
// comparison of an output against it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "flux/types.h"

namespace flux::tools {

// cudaMalloc'ed bytes, freed on scope exit (benchmarks, probes and tests).
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

// Uniform values in [-scale, scale], a counter-based hash of (seed, index): reproducible, never zero
// everywhere. `count` elements of `dtype`.
// e4m3: the values rounded to e4m3 (with scale > 1, most of them are not exact: rounding is exercised);
// fp32 too.
void fill_random(void* data, int64_t count, DType dtype, uint64_t seed, float scale, cudaStream_t stream);
// fp32 values uniform in [lo, hi) (FP8 scales).
void fill_scales(float* data, int64_t count, uint64_t seed, float lo, float hi, cudaStream_t stream);

// Every 16-bit element set to 0xFFFF (a NaN in both bf16 and fp16): an element still NaN after a run
// was never written.
void poison(void* data, int64_t count, cudaStream_t stream);

// One CTA that spins for `ns` of GPU time (%globaltimer): queued before a timed loop, it lets the host
// enqueue the whole loop before the GPU reaches it, so short kernels are timed as GPU work, not as the
// host's enqueue rate.
void gpu_delay(uint64_t ns, cudaStream_t stream);

// out[r, j] (fp64, num_rows x n) = sum_k A[rows[r], k] * op(B)[k, j] (+ bias[j]), inputs of `dtype`.
// `rows` is a device array of num_rows row indices into A.
void reference_gemm_rows(DType dtype, WeightLayout layout, int64_t n, int64_t k, const void* a, const void* b,
                         const void* bias, const int32_t* rows, int64_t num_rows, double* out, cudaStream_t stream);

// The FP8 reference: A [*, k] and B [n, k] in e4m3 (the dequantized values, exactly), out[r, j] =
// (sum_k A[rows[r], k] B[j, k]) * sa * sb (+ bias[j], `out_dtype`), sa / sb scale_a / scale_b [row] / [j]
// when scale_vectors, else [0].
void reference_fp8_gemm_rows(DType out_dtype, int64_t n, int64_t k, const void* a, const void* b, const void* bias,
                             const float* scale_a, const float* scale_b, bool scale_vectors, const int32_t* rows,
                             int64_t num_rows, double* out, cudaStream_t stream);

struct CompareResult {
  int64_t checked = 0;        // elements compared
  int64_t nonfinite = 0;      // NaN / Inf in the output (poison left = element never written)
  double max_row_rel = 0.0;   // max over rows of ||out_row - ref_row|| / ||ref_row||
  double global_rel = 0.0;    // ||out - ref|| / ||ref|| over all checked elements
  int64_t worst_row = -1;     // index into `rows` of the worst row
};

// Compares rows[r] of C [*, n] (dtype) with ref (num_rows x n, fp64). Synchronizes `stream`.
CompareResult compare_rows(DType dtype, int64_t n, const void* c, const int32_t* rows, int64_t num_rows,
                           const double* ref, cudaStream_t stream);

// Relative-error bound of the project for an output dtype: bf16 1e-2, fp16 5e-3.
double tolerance(DType dtype);

std::string describe(const CompareResult& r);

}  // namespace flux::tools
