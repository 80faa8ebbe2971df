// tools/bench/bench_operands.cpp — see bench_operands.h.
#include "tools/bench/bench_operands.h"

#include "src/common/check.h"

namespace flux::bench {

OpBenchTypes op_bench_types(DType dtype, const Args& args) {
  OpBenchTypes t;
  t.in = dtype;
  t.out = dtype;
  if (dtype == DType::kE4M3) {
    t.out = parse_dtype(args.get("--out-dtype", "bf16"));
    t.scale = parse_scale_kind(args.get("--scale", "per-tensor"));
    FLUX_CHECK_ARG(t.scale != ScaleKind::kNone, "flux-bench: --scale none (FP8 rows need per-tensor or per-row-col)");
  }
  return t;
}

OpBenchScales::OpBenchScales(const OpBenchTypes& types, int64_t a_rows, int64_t n, uint64_t seed_a, uint64_t seed_b,
                             cudaStream_t stream) {
  if (!types.fp8()) return;
  a_count = types.vectors() ? a_rows : 1;
  b_count = types.vectors() ? n : 1;
  a = std::make_unique<tools::DeviceBuffer>(size_t(a_count) * sizeof(float));
  b = std::make_unique<tools::DeviceBuffer>(size_t(b_count) * sizeof(float));
  tools::fill_scales(a->as<float>(), a_count, seed_a, 0.5f, 2.0f, stream);
  tools::fill_scales(b->as<float>(), b_count, seed_b, 0.01f, 0.03f, stream);
}

void op_reference_rows(const OpBenchTypes& types, WeightLayout layout, int64_t n, int64_t k, const void* a, const void* b,
                       const void* bias, const float* sa, const float* sb, const int32_t* rows, int64_t count,
                       double* out, cudaStream_t stream) {
  if (types.fp8()) {
    tools::reference_fp8_gemm_rows(types.out, n, k, a, b, bias, sa, sb, types.vectors(), rows, count, out, stream);
  } else {
    tools::reference_gemm_rows(types.in, layout, n, k, a, b, bias, rows, count, out, stream);
  }
}

}  // namespace flux::bench
