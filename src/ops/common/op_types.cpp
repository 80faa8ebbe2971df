// src/ops/common/op_types.cpp — see op_types.h.
#include "src/ops/common/op_types.h"

#include <cstdint>

#include "src/common/check.h"

namespace flux::ops {

std::string OpTypes::describe() const {
  if (!fp8()) return detail::cat(to_string(in), " ", to_string(layout));
  return detail::cat(to_string(in), "->", to_string(out), " ", to_string(scale), " ", to_string(layout));
}

OpTypes resolve_op_types(const char* op, DType dtype, WeightLayout layout, DType out_dtype, ScaleKind scale, int64_t n,
                         int64_t k) {
  FLUX_CHECK_ARG(dtype == DType::kBF16 || dtype == DType::kFP16 || dtype == DType::kE4M3, op, ": dtype ", to_string(dtype),
                 " (expected bf16, fp16, or e4m3 with out_dtype bf16 / fp16 and a scale kind)");
  OpTypes t;
  t.in = dtype;
  t.out = dtype == DType::kE4M3 ? out_dtype : dtype;
  t.scale = scale;
  t.layout = layout;
  try {
    validate_gemm_desc(t.core(n, k));
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(detail::cat(op, ": ", e.what()));
  }
  return t;
}

namespace {

void check_scale(const char* op, const char* name, const TensorRef& s, int64_t cols, bool vector) {
  FLUX_CHECK_ARG(s.data != nullptr, op, ": e4m3 needs ", name, " (fp32 ", vector ? detail::cat("1 x ", cols) : std::string("1 x 1"),
                 ", device memory; got null)");
  FLUX_CHECK_ARG(s.dtype == DType::kFP32 && s.rows == 1 && s.cols == (vector ? cols : 1), op, ": ", name, " is ", s.rows,
                 " x ", s.cols, " ", to_string(s.dtype), "; expected 1 x ", vector ? cols : 1, " fp32 (",
                 vector ? "one scale per row / column" : "one scale per tensor", ")");
  const uintptr_t align = vector ? 15u : 3u;
  FLUX_CHECK_ARG((reinterpret_cast<uintptr_t>(s.data) & align) == 0, op, ": ", name, " = ", s.data, " is not ", align + 1,
                 "-byte aligned (expected ", vector ? "a 16-byte aligned fp32 vector" : "a 4-byte aligned fp32 value", ")");
}

}  // namespace

void check_op_scales(const char* op, const OpTypes& types, const TensorRef& scale_a, int64_t a_rows,
                     const TensorRef& scale_b, int64_t b_cols) {
  if (!types.fp8()) {
    FLUX_CHECK_ARG(scale_a.data == nullptr && scale_b.data == nullptr, op, ": scale_a / scale_b given for ",
                   to_string(types.in), " inputs (scales are for e4m3; expected none)");
    return;
  }
  check_scale(op, "scale_a", scale_a, a_rows, types.row_scales());
  check_scale(op, "scale_b", scale_b, b_cols, types.row_scales());
}

void check_call_rows(const char* op, int64_t m, int64_t max_m, int world, bool per_rank) {
  FLUX_CHECK_ARG(m >= 1 && m <= max_m, op, ": M = ", m, " (expected 1 <= M <= max_m = ", max_m, ")");
  FLUX_CHECK_ARG(!per_rank || m % world == 0, op, ": M = ", m, " is not a multiple of the world size ", world,
                 " (each rank has M / W rows; pad M to a multiple of W)");
}

}  // namespace flux::ops
