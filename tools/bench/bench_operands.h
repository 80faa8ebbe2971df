// tools/bench/bench_operands.h — the operands of a fused-op benchmark row in its element types, written
// once for flux-bench ag-gemm and gemm-rs: bf16 / fp16, or FP8 (--dtypes e4m3) with its output type
// (--out-dtype, default bf16) and scales (--scale per-tensor (default) or per-row-col), never 1.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "flux/gemm.h"
#include "flux/tensor.h"
#include "tools/bench/bench_args.h"
#include "tools/common/device_tools.h"

namespace flux::bench {

struct OpBenchTypes {
  DType in = DType::kBF16;   // A, B
  DType out = DType::kBF16;  // out, partials, bias
  ScaleKind scale = ScaleKind::kNone;
  bool fp8() const { return in == DType::kE4M3; }
  bool vectors() const { return scale == ScaleKind::kPerRowCol; }
  GemmDesc core(int64_t n, int64_t k, WeightLayout layout) const { return GemmDesc{n, k, in, layout, out, scale}; }
  // A's random values span [-a_range, a_range]: 4 for e4m3 (most values then round: rounding is exercised).
  float a_range() const { return fp8() ? 4.0f : 1.0f; }
};
// The types of a row of `dtype`: e4m3 reads --out-dtype and --scale (declare both options).
OpBenchTypes op_bench_types(DType dtype, const Args& args);

// One rank's FP8 scales from seeds: scale_a over a_rows rows (one value per tensor), scale_b over n
// columns; empty for bf16 / fp16. scale_a in [0.5, 2), scale_b in [0.01, 0.03).
struct OpBenchScales {
  std::unique_ptr<tools::DeviceBuffer> a, b;
  int64_t a_count = 0, b_count = 0;
  OpBenchScales(const OpBenchTypes& types, int64_t a_rows, int64_t n, uint64_t seed_a, uint64_t seed_b, cudaStream_t stream);
  const float* sa() const { return a ? a->as<float>() : nullptr; }
  const float* sb() const { return b ? b->as<float>() : nullptr; }
  TensorRef a_ref() const { return a ? TensorRef(a->ptr, 1, a_count, DType::kFP32) : TensorRef(); }
  TensorRef b_ref() const { return b ? TensorRef(b->ptr, 1, b_count, DType::kFP32) : TensorRef(); }
};

// out[r, j] (fp64) for rows[r] of A: the 16-bit reference, or the FP8 one from the dequantized inputs with
// sa / sb (indexed by rows[r] and j when per row / column).
void op_reference_rows(const OpBenchTypes& types, WeightLayout layout, int64_t n, int64_t k, const void* a, const void* b,
                       const void* bias, const float* sa, const float* sb, const int32_t* rows, int64_t count,
                       double* out, cudaStream_t stream);

}  // namespace flux::bench
