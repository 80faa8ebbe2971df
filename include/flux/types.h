// flux/types.h — element types and weight layouts shared by every op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace flux {

// Element types. The GEMM core takes bf16 or fp16 in and out, or e4m3 (FP8) in with bf16 / fp16 out and
// scales (GemmDesc::out_dtype, GemmDesc::scale); fp32 accumulation. The fused ops take the same (their descs'
// dtype, out_dtype and scale; src/ops/common/op_types.h).
// kFP32 exists so that a kernel key (src/gemm/kernel_key.h) can say what a kernel is (split-K partials,
// the accumulator); every API that does not support a type refuses it by name.
enum class DType : int32_t { kBF16 = 0, kFP16 = 1, kE4M3 = 2, kFP32 = 3 };

// How FP8 inputs are scaled: C = (sum_k A[m, k] B[n, k]) * sa * sb (+ bias) with one fp32 scale per
// tensor (kPerTensor: sa = scale_a[0], sb = scale_b[0]), or one per row of A and per column of B
// (kPerRowCol: sa = scale_a[m], sb = scale_b[n]). kNone for bf16 / fp16 inputs.
enum class ScaleKind : int32_t { kNone = 0, kPerTensor = 1, kPerRowCol = 2 };

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
const char* to_string(ScaleKind scale);  // "none", "per-tensor", "per-row-col"
// Parse "bf16" / "fp16" / "e4m3" (alias "fp8"): the input types the library runs; "nk" / "kn";
// "none" / "per-tensor" / "per-row-col". Throw InvalidArgument naming the accepted values otherwise.
DType parse_dtype(const std::string& text);
WeightLayout parse_weight_layout(const std::string& text);
ScaleKind parse_scale_kind(const std::string& text);

}  // namespace flux
