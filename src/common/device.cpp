// src/common/device.cpp — device limits, read from the device (never from a table of known GPUs).
#include <cuda_runtime_api.h>

#include "flux/gemm.h"
#include "src/common/check.h"

namespace flux {

DeviceLimits query_device_limits(int device) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();  // clear the sticky "no device" error for later callers
    throw Unsupported(detail::cat("flux: no CUDA device is available (cudaGetDeviceCount: ",
                                  err == cudaSuccess ? "0 devices" : cudaGetErrorString(err), ")"));
  }
  if (device < 0) FLUX_CUDA_CHECK(cudaGetDevice(&device));
  FLUX_CHECK_ARG(device < count, "flux: device ", device, " does not exist (", count, " visible)");
  cudaDeviceProp prop{};
  FLUX_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceLimits limits;
  limits.device = device;
  limits.cc_major = prop.major;
  limits.cc_minor = prop.minor;
  limits.sm_count = prop.multiProcessorCount;
  limits.smem_per_block_optin = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
  limits.l2_bytes = prop.l2CacheSize;
  limits.name = prop.name;
  // Peak HBM bandwidth from the memory clock (kHz, double data rate) and the bus width (bits). A device that does
  // not report them (an error, or 0) leaves 0: the heuristic then uses its default rate table.
  int mem_khz = 0, bus_bits = 0;
  const cudaError_t clock_err = cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device);
  const cudaError_t bus_err = cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
  if (clock_err == cudaSuccess && bus_err == cudaSuccess && mem_khz > 0 && bus_bits > 0) {
    limits.hbm_bytes_per_s = int64_t(mem_khz) * 1000 * 2 * (bus_bits / 8);
  } else {
    (void)cudaGetLastError();  // an unsupported attribute is not an error for later calls
  }
  return limits;
}

}  // namespace flux
