// tests/support/gpu_support.h — what the GPU tests share: the skip rule, device buffers, and a
// checked GEMM run against the fp64 reference.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "flux/gemm.h"
#include "src/common/check.h"
#include "tools/common/device_tools.h"

namespace flux::testing {

// Empty when an sm_90 GPU is present; otherwise why not.
inline std::string why_no_gpu() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return std::string("no CUDA device (cudaGetDeviceCount: ") + (err == cudaSuccess ? "0 devices" : cudaGetErrorString(err)) + ")";
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "cudaGetDeviceProperties failed";
  if (prop.major != 9 || prop.minor != 0) return std::string("device 0 is ") + prop.name + ", not sm_90";
  return "";
}

#define FLUX_REQUIRE_GPU()                                                      \
  do {                                                                          \
    std::string flux_why_ = ::flux::testing::why_no_gpu();                      \
    if (!flux_why_.empty()) GTEST_SKIP() << "GPU test skipped: " << flux_why_;  \
  } while (0)

using tools::DeviceBuffer;

// Inputs, output and fp64 reference of one GEMM problem, all rows checked. FP8 descs (e4m3): A and B
// drawn in [-4, 4] and [-1, 1] and rounded to e4m3 (rounding exercised), scales drawn in [0.5, 2) for A
// and [0.01, 0.03) for B (never 1), the reference built from the dequantized values.
struct GemmProblem {
  GemmDesc desc;
  int64_t m;
  bool with_bias;
  DeviceBuffer a, b, c, bias, rows, ref, scale_a, scale_b;

  static size_t in_size(const GemmDesc& d) { return dtype_size(d.dtype); }
  static size_t out_size(const GemmDesc& d) { return dtype_size(gemm_out_dtype(d)); }
  static bool fp8(const GemmDesc& d) { return d.dtype == DType::kE4M3; }
  static int64_t scales_of(const GemmDesc& d, int64_t count) { return d.scale == ScaleKind::kPerRowCol ? count : 1; }

  GemmProblem(const GemmDesc& d, int64_t m_, bool bias_, uint64_t seed, cudaStream_t stream)
      : desc(d),
        m(m_),
        with_bias(bias_),
        a(size_t(m_ * d.k) * in_size(d)),
        b(size_t(d.n * d.k) * in_size(d)),
        c(size_t(m_ * d.n) * out_size(d)),
        bias(size_t(d.n) * out_size(d)),
        rows(size_t(m_) * sizeof(int32_t)),
        ref(size_t(m_ * d.n) * sizeof(double)),
        scale_a(size_t(scales_of(d, m_)) * sizeof(float)),
        scale_b(size_t(scales_of(d, d.n)) * sizeof(float)) {
    tools::fill_random(a.ptr, m * d.k, d.dtype, seed * 3 + 1, fp8(d) ? 4.0f : 1.0f, stream);
    tools::fill_random(b.ptr, d.n * d.k, d.dtype, seed * 3 + 2, 1.0f, stream);
    tools::fill_random(bias.ptr, d.n, gemm_out_dtype(d), seed * 3 + 3, 1.0f, stream);
    if (fp8(d)) {
      tools::fill_scales(scale_a.as<float>(), scales_of(d, m), seed * 5 + 1, 0.5f, 2.0f, stream);
      tools::fill_scales(scale_b.as<float>(), scales_of(d, d.n), seed * 5 + 2, 0.01f, 0.03f, stream);
    }
    std::vector<int32_t> all(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) all[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    FLUX_CUDA_CHECK(cudaMemcpyAsync(rows.ptr, all.data(), all.size() * sizeof(int32_t), cudaMemcpyHostToDevice, stream));
    compute_reference(stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  // Recompute the reference (after the test changed A, B or the scales).
  void compute_reference(cudaStream_t stream) {
    if (fp8(desc)) {
      tools::reference_fp8_gemm_rows(desc.out_dtype, desc.n, desc.k, a.ptr, b.ptr, with_bias ? bias.ptr : nullptr,
                                     scale_a.as<float>(), scale_b.as<float>(), desc.scale == ScaleKind::kPerRowCol,
                                     rows.as<int32_t>(), m, ref.as<double>(), stream);
      return;
    }
    tools::reference_gemm_rows(desc.dtype, desc.layout, desc.n, desc.k, a.ptr, b.ptr, with_bias ? bias.ptr : nullptr,
                               rows.as<int32_t>(), m, ref.as<double>(), stream);
  }

  GemmArgs args() const {
    GemmArgs g;
    g.m = m;
    g.a = a.ptr;
    g.b = b.ptr;
    g.bias = with_bias ? bias.ptr : nullptr;
    g.c = c.ptr;
    if (fp8(desc)) {
      g.scale_a = scale_a.as<float>();
      g.scale_b = scale_b.as<float>();
    }
    return g;
  }

  void poison_output(cudaStream_t stream) { tools::poison(c.ptr, m * desc.n, stream); }

  tools::CompareResult compare(cudaStream_t stream) const {
    return tools::compare_rows(gemm_out_dtype(desc), desc.n, c.ptr, rows.as<int32_t>(), m, ref.as<double>(), stream);
  }
};

inline void expect_close(const tools::CompareResult& r, DType dtype, const std::string& what) {
  EXPECT_EQ(r.nonfinite, 0) << what << ": " << tools::describe(r);
  EXPECT_LT(r.global_rel, tools::tolerance(dtype)) << what << ": " << tools::describe(r);
  EXPECT_LT(r.max_row_rel, tools::tolerance(dtype)) << what << ": " << tools::describe(r);
}

// A non-blocking stream the test owns.
class Stream {
 public:
  Stream() { FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// A random multiple of 8 in [lo, hi] (N and K of the GEMM core must be multiples of 8).
inline int64_t random_dim(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return 8 * std::uniform_int_distribution<int64_t>(lo / 8, hi / 8)(rng);
}

// The bytes of a device buffer (synchronous copy), e.g. to compare two runs bit for bit.
inline std::vector<char> to_host(const DeviceBuffer& b) {
  std::vector<char> h(b.bytes);
  FLUX_CUDA_CHECK(cudaMemcpy(h.data(), b.ptr, b.bytes, cudaMemcpyDeviceToHost));
  return h;
}

}  // namespace flux::testing
