// flux/types.h — element types and weight layouts shared by every op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace flux {

// Element types. The GEMM core and the fused ops take bf16 or fp16 in and out today (fp32
// accumulation); kE4M3 (FP8) and kFP32 exist so that a kernel key (src/gemm/kernel_key.h) can say what a
// kernel is, and every API that does not support a type refuses it by name.
enum class DType : int32_t { kBF16 = 0, kFP16 = 1, kE4M3 = 2, kFP32 = 3 };

// Layout of the weight B. kNK is torch.nn.Linear's [out, in] = [N, K] row-major (C = A B^T);
// kKN is [K, N] row-major (C = A B).
enum class WeightLayout : int32_t { kNK = 0, kKN = 1 };

// Bytes per element (0 for a value that is not a DType).
constexpr size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
    case DType::kFP16:
      return 2;
    case DType::kE4M3:
      return 1;
    case DType::kFP32:
      return 4;
  }
  return 0;
}

const char* to_string(DType dtype);
const char* to_string(WeightLayout layout);
// Parse "bf16" / "fp16" (the input types the library runs today) and "nk" / "kn"; throw InvalidArgument
// naming the accepted values otherwise.
DType parse_dtype(const std::string& text);
WeightLayout parse_weight_layout(const std::string& text);

}  // namespace flux
