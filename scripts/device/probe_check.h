// scripts/device/probe_check.h — CK(call): the diagnosis probes' (gemv_probe.cu, release_probe.cu) check of a CUDA
// runtime call: on an error, print the call and the error and exit 1.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));       \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)
