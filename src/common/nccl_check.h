// src/common/nccl_check.h — FLUX_NCCL_CHECK(call): an NCCL call; throws flux::CudaError
// "<file>:<line>: <call> failed: <NCCL's error string>". ncclInProgress (non-blocking init) is not an error.
#pragma once

#include <nccl.h>

#include "src/common/check.h"

#define FLUX_NCCL_CHECK(call)                                                                                  \
  do {                                                                                                         \
    ncclResult_t flux_nccl_ = (call);                                                                          \
    if (flux_nccl_ != ncclSuccess && flux_nccl_ != ncclInProgress) {                                           \
      throw ::flux::CudaError(::flux::detail::cat(__FILE__, ":", __LINE__, ": ", #call, " failed: ",           \
                                                  ncclGetErrorString(flux_nccl_)));                            \
    }                                                                                                          \
  } while (0)
