// flux/tensor.h — a 2-D row-major view of device memory that ops validate (shape, dtype, alignment).
#pragma once

#include <cstdint>
#include <string>

#include "flux/types.h"

namespace flux {

struct TensorRef {
  const void* data = nullptr;  // device memory, row-major, rows x cols contiguous
  int64_t rows = 0;
  int64_t cols = 0;
  DType dtype = DType::kBF16;

  TensorRef() = default;
  TensorRef(const void* d, int64_t r, int64_t c, DType t) : data(d), rows(r), cols(c), dtype(t) {}
  void* mutable_data() const { return const_cast<void*>(data); }
  int64_t bytes() const { return rows * cols * static_cast<int64_t>(dtype_size(dtype)); }
};

// Throws InvalidArgument "<op>: <name> is <rows> x <cols> <dtype>; expected <er> x <ec> <edtype>" (or that
// it is null / not 16-byte aligned) unless t matches. expect_rows / expect_cols < 0 skip that check.
void check_tensor(const char* op, const char* name, const TensorRef& t, int64_t expect_rows, int64_t expect_cols,
                  DType expect_dtype);

}  // namespace flux
