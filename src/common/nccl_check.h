// src/common/nccl_check.h — NCCL return codes (the dtype -> NCCL type map is src/common/dtype_maps.h).
//   FLUX_NCCL_CHECK(call)        an NCCL call outside a communicator's life (version, unique id, init):
//                                throws flux::CudaError "<file>:<line>: <call> failed: <NCCL's error>";
//                                ncclInProgress (non-blocking init, polled by the caller) is not an error.
//   FLUX_NCCL_CALL(comm, call)   a call on a Communicator's (non-blocking) NCCL communicator: polled to
//                                completion against the deadline, failures poison the communicator
//                                (Communicator::nccl_complete, which quotes NCCL's rules).
#pragma once

#include <nccl.h>

#include "flux/types.h"
#include "src/common/check.h"
#include "src/common/dtype_maps.h"

#define FLUX_NCCL_CHECK(call)                                                                                  \
  do {                                                                                                         \
    ncclResult_t flux_nccl_ = (call);                                                                          \
    if (flux_nccl_ != ncclSuccess && flux_nccl_ != ncclInProgress) {                                           \
      throw ::flux::CudaError(::flux::detail::cat(__FILE__, ":", __LINE__, ": ", #call, " failed: ",           \
                                                  ncclGetErrorString(flux_nccl_)));                            \
    }                                                                                                          \
  } while (0)

#define FLUX_NCCL_CALL(comm, call) (comm).nccl_complete(static_cast<int>(call), #call)
