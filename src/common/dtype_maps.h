// src/common/dtype_maps.h — every host-side map from a Flux DType to another library's type, in one
// place: CUDA / cuBLAS (cudaDataType_t) and NCCL (ncclDataType_t). The device-side map to CUTLASS's
// element types is ElementOf in src/gemm/kernel/sm90_gemm_kernel.cuh (the only code that sees CUTLASS).
// A type a library has no counterpart for is an Unsupported error naming both.
#pragma once

#include <library_types.h>
#include <nccl.h>

#include "flux/error.h"
#include "flux/types.h"
#include "src/common/check.h"

namespace flux::detail {

inline cudaDataType_t cuda_data_type(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return CUDA_R_16BF;
    case DType::kFP16:
      return CUDA_R_16F;
    case DType::kE4M3:
      return CUDA_R_8F_E4M3;
    case DType::kFP32:
      return CUDA_R_32F;
  }
  throw Unsupported(cat("flux: no CUDA data type for dtype ", static_cast<int>(dtype)));
}

// NCCL moves FP8 as bytes (it has no e4m3 type it can reduce): all-gathers and copies only; a reduction
// of FP8 data is refused by the op before it gets here.
inline ncclDataType_t nccl_data_type(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kFP16:
      return ncclFloat16;
    case DType::kE4M3:
      return ncclUint8;
    case DType::kFP32:
      return ncclFloat32;
  }
  throw Unsupported(cat("flux: no NCCL data type for dtype ", static_cast<int>(dtype)));
}

}  // namespace flux::detail
