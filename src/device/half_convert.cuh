// src/device/half_convert.cuh — bf16 / fp16 <-> fp32 for the library's own kernels (the GEMM core's skinny
// kernels, the split-K reduction): one element to float, two floats rounded (to nearest) into one packed
// 32-bit word, four into 8 bytes. T is __nv_bfloat16 or __half.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace flux::device {

template <class T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <>
__device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }

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

// Four floats rounded to T and stored as 8 bytes at dst (8-byte aligned).
template <class T>
__device__ __forceinline__ void store4(T* dst, const float (&f)[4]) {
  *reinterpret_cast<uint2*>(dst) = make_uint2(pack2<T>(f[0], f[1]), pack2<T>(f[2], f[3]));
}

}  // namespace flux::device
