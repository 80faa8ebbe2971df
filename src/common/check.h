// src/common/check.h — the one family of check macros for host code.
//
//   FLUX_CUDA_CHECK(call)       a CUDA runtime call; throws flux::CudaError "<file>:<line>: <call> failed: <error>"
//   FLUX_CUDA_CHECK_LAUNCH(what) after a kernel launch: cudaGetLastError(), naming the kernel
//   FLUX_CUBLAS_CHECK(call)     a cuBLAS / cuBLASLt call
//   FLUX_CHECK_ARG(cond, ...)   an argument precondition; throws flux::InvalidArgument with the message
//   FLUX_CHECK(cond, ...)       an internal invariant; throws flux::Error (a bug if it fires)
// Messages are built with flux::detail::cat(args...) (operator<< of each piece).
// Device code has its own reporting (flux/device_status.h); nothing here runs on the GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <sstream>
#include <string>
#include <utility>

#include "flux/error.h"

namespace flux::detail {

template <class... Ts>
std::string cat(Ts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Ts>(parts));
  return out.str();
}

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(int status, const char* call, const char* file, int line);

}  // namespace flux::detail

#define FLUX_CUDA_CHECK(call)                                                 \
  do {                                                                        \
    cudaError_t flux_err_ = (call);                                           \
    if (flux_err_ != cudaSuccess) {                                           \
      ::flux::detail::throw_cuda_error(flux_err_, #call, __FILE__, __LINE__); \
    }                                                                         \
  } while (0)

#define FLUX_CUDA_CHECK_LAUNCH(what)                                          \
  do {                                                                        \
    cudaError_t flux_err_ = cudaGetLastError();                               \
    if (flux_err_ != cudaSuccess) {                                           \
      ::flux::detail::throw_cuda_error(flux_err_, what, __FILE__, __LINE__);  \
    }                                                                         \
  } while (0)

#define FLUX_CUBLAS_CHECK(call)                                                              \
  do {                                                                                       \
    auto flux_status_ = (call);                                                              \
    if (static_cast<int>(flux_status_) != 0) {                                               \
      ::flux::detail::throw_cublas_error(static_cast<int>(flux_status_), #call, __FILE__, __LINE__); \
    }                                                                                        \
  } while (0)

#define FLUX_CHECK_ARG(cond, ...)                                               \
  do {                                                                          \
    if (!(cond)) throw ::flux::InvalidArgument(::flux::detail::cat(__VA_ARGS__)); \
  } while (0)

#define FLUX_CHECK(cond, ...)                                                                  \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      throw ::flux::Error(::flux::detail::cat(__FILE__, ":", __LINE__, ": internal error: ", \
                                              __VA_ARGS__));                                   \
    }                                                                                          \
  } while (0)
