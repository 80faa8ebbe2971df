// src/ops/common/op_types.h — the element types of a fused op's GEMM, resolved and checked once for every
// op (GPU-free, CPU-tested).
//
// A fused op's desc says its input type (A and B), the output type (partials, out, bias: bf16 / fp16 in
// and out, or e4m3 in with bf16 / fp16 out) and the FP8 scale kind, exactly as the GEMM core's GemmDesc;
// OpTypes holds the resolved triple, builds the core's desc for a (N, K) and checks a call's scale
// tensors. Reductions (GEMM+RS, GEMM+AR) sum the partials in fp32 whatever the input type: FP8 partials
// are the core's bf16 / fp16 output, scaled in its epilogue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "flux/gemm.h"
#include "flux/tensor.h"
#include "flux/types.h"

namespace flux::ops {

struct OpTypes {
  DType in = DType::kBF16;   // A and B (an AG+GEMM gathers A in this type)
  DType out = DType::kBF16;  // C, partials, bias
  ScaleKind scale = ScaleKind::kNone;
  WeightLayout layout = WeightLayout::kNK;

  size_t in_bytes() const { return dtype_size(in); }
  size_t out_bytes() const { return dtype_size(out); }
  bool fp8() const { return in == DType::kE4M3; }
  bool row_scales() const { return scale == ScaleKind::kPerRowCol; }
  GemmDesc core(int64_t n, int64_t k) const { return GemmDesc{n, k, in, layout, out, scale}; }
  // "e4m3->bf16 per-row-col nk" / "bf16 nk": compared across ranks at plan build.
  std::string describe() const;
};

// Resolves an op's (dtype, layout, out_dtype, scale) and validates it with the GEMM core's rules for
// (n, k) (InvalidArgument naming the op otherwise). bf16 / fp16 ignore out_dtype (out = dtype).
OpTypes resolve_op_types(const char* op, DType dtype, WeightLayout layout, DType out_dtype, ScaleKind scale, int64_t n,
                         int64_t k);

// A call's scales: none for bf16 / fp16 (both null); for e4m3 fp32 tensors, per tensor 1 x 1 (4-byte
// aligned), per row / column 1 x a_rows and 1 x b_cols (16-byte aligned). InvalidArgument otherwise,
// naming the op, the tensor and what was expected.
void check_op_scales(const char* op, const OpTypes& types, const TensorRef& scale_a, int64_t a_rows,
                     const TensorRef& scale_b, int64_t b_cols);

// A call's M against the plan: 1 <= M <= max_m and, for the ops that split M across ranks (`per_rank`:
// GEMM+RS's out rows, AG+GEMM's shards), a multiple of W. InvalidArgument naming the op otherwise.
void check_call_rows(const char* op, int64_t m, int64_t max_m, int world, bool per_rank);

}  // namespace flux::ops
