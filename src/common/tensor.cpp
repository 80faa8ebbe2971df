// src/common/tensor.cpp — argument checks of TensorRef (flux/tensor.h).
#include "flux/tensor.h"

#include <cstdint>

#include "src/common/check.h"

namespace flux {

void check_tensor(const char* op, const char* name, const TensorRef& t, int64_t expect_rows, int64_t expect_cols,
                  DType expect_dtype) {
  auto shape = [](int64_t r, int64_t c) {
    return detail::cat(r < 0 ? std::string("*") : std::to_string(r), " x ", c < 0 ? std::string("*") : std::to_string(c));
  };
  FLUX_CHECK_ARG(t.data != nullptr, op, ": ", name, " is null (expected a device pointer to ", shape(expect_rows, expect_cols),
                 " ", to_string(expect_dtype), ")");
  FLUX_CHECK_ARG(t.dtype == expect_dtype && (expect_rows < 0 || t.rows == expect_rows) && (expect_cols < 0 || t.cols == expect_cols),
                 op, ": ", name, " is ", t.rows, " x ", t.cols, " ", to_string(t.dtype), "; expected ",
                 shape(expect_rows, expect_cols), " ", to_string(expect_dtype));
  FLUX_CHECK_ARG((reinterpret_cast<uintptr_t>(t.data) & 15u) == 0, op, ": ", name, " = ", t.data,
                 " is not 16-byte aligned (expected a 16-byte aligned device pointer)");
}

}  // namespace flux
