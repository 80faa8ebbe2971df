// src/ops/gemm_rs/gemm_rs_plan.h — GPU-free planning of GEMM+RS (gemm_rs_plan.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "flux/gemm_ar.h"
#include "flux/gemm_rs.h"

namespace flux::ops {

// Column bands so that a band of B (elements of b_elem_bytes: 2 for bf16 / fp16, 1 for e4m3) and of the
// fp32 accumulator fit in half the L2.
int32_t auto_col_bands(int64_t n, int64_t k_per_rank, int64_t segment_rows, int64_t l2_bytes, int32_t units_n,
                       int64_t b_elem_bytes = 2);

// The layout run() uses for M on `rank`: path, rank-rotated tile order and column bands for the
// GEMM core's selection `gemm` (made on the SMs left after the reduction's). `forced` kAuto applies
// the rule; col_bands 0 = auto.
GemmRsLayout plan_gemm_rs(int64_t m, const GemmRsDesc& desc, int world_size, int rank, const GemmSelection& gemm,
                          const DeviceLimits& limits, int32_t reduce_sms, int32_t col_bands, GemmRsImpl forced);

// GEMM+AR on `rank`: one-shot, every rank reduces every row (segment_rows = M, one segment, the GEMM's
// natural order); two-shot and rs_ag, GEMM+RS's rank-rotated order over segments of ceil(M / W) rows.
// `forced` kAuto applies the rule (choose_gemm_ar_path); col_bands 0 = auto.
GemmRsLayout plan_gemm_ar(int64_t m, const GemmRsDesc& desc, int world_size, int rank, const GemmSelection& gemm,
                          const DeviceLimits& limits, int32_t reduce_sms, int32_t col_bands, GemmArPath forced);

}  // namespace flux::ops
