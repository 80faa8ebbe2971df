// src/common/device_guard.h — makes `device` current for a scope and restores the caller's device after.
#pragma once

#include <cuda_runtime_api.h>

#include "src/common/check.h"

namespace flux::detail {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    FLUX_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) FLUX_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { (void)cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace flux::detail
