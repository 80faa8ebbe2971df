// flux/types.h — element types and weight layouts shared by every op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace flux {

// Input and output element type. Accumulation is always fp32.
enum class DType : int32_t { kBF16 = 0, kFP16 = 1 };

// Layout of the weight B. kNK is torch.nn.Linear's [out, in] = [N, K] row-major (C = A B^T);
// kKN is [K, N] row-major (C = A B).
enum class WeightLayout : int32_t { kNK = 0, kKN = 1 };

inline size_t dtype_size(DType) { return 2; }

const char* to_string(DType dtype);
const char* to_string(WeightLayout layout);
// Parse "bf16" / "fp16" and "nk" / "kn"; throw InvalidArgument naming the accepted values otherwise.
DType parse_dtype(const std::string& text);
WeightLayout parse_weight_layout(const std::string& text);

}  // namespace flux
