// src/ops/gemm_rs/gemm_rs_plan.cpp — host planning of GEMM+RS that needs no GPU: the rule, the
// rank-rotated tile order, the column bands, and which ranks a tile goes to.
#include <algorithm>
#include <cstdint>

#include "flux/gemm_rs.h"
#include "flux/knobs.h"
#include "src/common/check.h"
#include "src/ops/gemm_rs/gemm_rs_plan.h"

namespace flux {

const char* to_string(GemmRsImpl impl) {
  switch (impl) {
    case GemmRsImpl::kAuto: return "auto";
    case GemmRsImpl::kFused: return "fused";
    case GemmRsImpl::kSequential: return "sequential";
    case GemmRsImpl::kDecomposed: return "decomposed";
  }
  return "?";
}

GemmRsImpl parse_gemm_rs_impl(const std::string& text) {
  if (text == "auto") return GemmRsImpl::kAuto;
  if (text == "fused") return GemmRsImpl::kFused;
  if (text == "sequential") return GemmRsImpl::kSequential;
  if (text == "decomposed") return GemmRsImpl::kDecomposed;
  throw InvalidArgument(detail::cat("flux gemm_rs: unknown implementation '", text,
                                    "' (expected auto, fused, sequential or decomposed)"));
}

// The rule. Reasons:
//  - W = 1: a reduce-scatter over one rank is the identity; every path is the GEMM core into out.
//  - A small GEMM (under 2 GFLOP per rank: ~3 us of H200 tensor time) cannot hide anything: the fused
//    path adds a device barrier, a second kernel and SMs taken from the GEMM, each a few microseconds,
//    so the plain sequential path wins.
//  - Otherwise fused: the partial tiles are pulled and reduced while the GEMM runs.
// NOTE: the thresholds are from the cost model above, not yet from NVLink measurements (issue 6
// measures fused vs sequential vs decomposed on 8 H200s and will replace them).
GemmRsImpl choose_gemm_rs_impl(int64_t m, int64_t n, int64_t k_per_rank, int world_size, std::string* reason) {
  auto say = [&](const std::string& text) {
    if (reason) *reason = text;
  };
  if (world_size == 1) {
    say("one rank: the reduce-scatter is the identity, the GEMM core writes out directly");
    return GemmRsImpl::kFused;
  }
  const double flops = 2.0 * double(m) * double(n) * double(k_per_rank);
  if (flops < 2e9) {
    say(detail::cat("rule: sequential, the per-rank GEMM is ", flops / 1e9,
                    " GFLOP (< 2): too short to hide the fused path's fixed costs"));
    return GemmRsImpl::kSequential;
  }
  say(detail::cat("rule: fused, the per-rank GEMM is ", flops / 1e9, " GFLOP (>= 2)"));
  return GemmRsImpl::kFused;
}

void gemm_rs_tile_destinations(int64_t m, int world_size, int64_t row0, int64_t rows, int* first_rank, int* last_rank) {
  FLUX_CHECK_ARG(world_size >= 1 && m % world_size == 0 && rows >= 1 && row0 >= 0 && row0 + rows <= m,
                 "flux gemm_rs: tile rows [", row0, ", ", row0 + rows, ") of M = ", m, " with W = ", world_size);
  const int64_t seg = m / world_size;
  *first_rank = static_cast<int>(row0 / seg);
  *last_rank = static_cast<int>((row0 + rows - 1) / seg);
}

namespace ops {

int32_t auto_col_bands(int64_t n, int64_t k_per_rank, int64_t segment_rows, int64_t l2_bytes, int32_t units_n) {
  // One band of B (n / bands x K x 2 bytes) and of the fp32 accumulator (segment_rows x n / bands x 4)
  // together in half the L2: every segment of the band then reuses them instead of streaming all of B
  // once per segment (measured: the segmented order without bands cost up to 26% at short segments).
  const double band_bytes = double(n) * double(k_per_rank) * 2.0 + double(segment_rows) * double(n) * 4.0;
  const double budget = std::max<double>(double(l2_bytes) / 2.0, 1.0);
  int64_t bands = static_cast<int64_t>(band_bytes / budget) + 1;
  bands = std::min<int64_t>(bands, std::max(units_n, 1));
  return static_cast<int32_t>(std::clamp<int64_t>(bands, 1, kMaxColBands));
}

GemmRsLayout plan_gemm_rs(int64_t m, const GemmRsDesc& desc, int world_size, int rank, const GemmSelection& gemm,
                          int64_t l2_bytes, int32_t reduce_sms, int32_t col_bands, GemmRsImpl forced) {
  FLUX_CHECK_ARG(m >= 1 && m <= desc.max_m, "flux gemm_rs: M = ", m, " (expected 1 <= M <= max_m = ", desc.max_m, ")");
  FLUX_CHECK_ARG(m % world_size == 0, "flux gemm_rs: M = ", m, " is not a multiple of the world size ", world_size,
                 " (each rank gets M / W rows; pad M to a multiple of W)");
  GemmRsLayout out;
  out.m = m;
  out.segment_rows = m / world_size;
  out.gemm = gemm;
  if (forced != GemmRsImpl::kAuto) {
    out.impl = forced;
    out.reason = detail::cat("forced ", to_string(forced), " (FLUX_GEMM_RS_IMPL / GemmRsOptions::impl)");
  } else {
    out.impl = choose_gemm_rs_impl(m, desc.n, desc.k_per_rank, world_size, &out.reason);
  }
  if (out.impl == GemmRsImpl::kFused && world_size > 1) {
    out.reduce_sms = reduce_sms;
    // Rank r computes segment r+1 first and its own segment last (a ring), so at each step every rank
    // feeds a different destination, and the reduction of segment r takes source r-1-t at step t.
    out.order.segments = world_size;
    out.order.first_segment = (rank + 1) % world_size;
    out.order.segment_rows = out.segment_rows;
    const int64_t units_n = (gemm.tiles_n + gemm.config.cluster_n - 1) / gemm.config.cluster_n;
    out.col_bands = col_bands > 0 ? std::min<int32_t>(col_bands, static_cast<int32_t>(std::max<int64_t>(units_n, 1)))
                                  : auto_col_bands(desc.n, desc.k_per_rank, out.segment_rows, l2_bytes,
                                                   static_cast<int32_t>(units_n));
    out.order.col_bands = out.col_bands;
  }
  return out;
}

GemmRsLayout plan_gemm_ar(int64_t m, const GemmRsDesc& desc, int world_size, const GemmSelection& gemm,
                          int64_t l2_bytes, int32_t reduce_sms, int32_t col_bands, GemmRsImpl forced) {
  FLUX_CHECK_ARG(m >= 1 && m <= desc.max_m, "flux gemm_ar: M = ", m, " (expected 1 <= M <= max_m = ", desc.max_m, ")");
  GemmRsLayout out;
  out.m = m;
  out.segment_rows = m;
  out.gemm = gemm;
  if (forced != GemmRsImpl::kAuto) {
    out.impl = forced;
    out.reason = detail::cat("forced ", to_string(forced), " (FLUX_GEMM_AR_PATH / GemmArOptions::path)");
  } else {
    // The same trade as GEMM+RS: the fused path's fixed costs only pay on a GEMM that can hide them.
    out.impl = choose_gemm_rs_impl(m, desc.n, desc.k_per_rank, world_size, &out.reason);
    out.reason = "all-reduce, " + out.reason;
  }
  if (out.impl == GemmRsImpl::kFused && world_size > 1) {
    out.reduce_sms = reduce_sms;
    // Every rank the same order: the pull kernel takes each tile from every rank as it is published.
    out.order.segments = 1;
    out.order.first_segment = 0;
    out.order.segment_rows = m;
    const int64_t units_n = (gemm.tiles_n + gemm.config.cluster_n - 1) / gemm.config.cluster_n;
    out.col_bands = col_bands > 0 ? std::min<int32_t>(col_bands, static_cast<int32_t>(std::max<int64_t>(units_n, 1)))
                                  : auto_col_bands(desc.n, desc.k_per_rank, m, l2_bytes, static_cast<int32_t>(units_n));
    out.order.col_bands = out.col_bands;
  }
  return out;
}

}  // namespace ops
}  // namespace flux
