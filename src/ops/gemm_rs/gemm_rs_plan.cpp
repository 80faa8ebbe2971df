// src/ops/gemm_rs/gemm_rs_plan.cpp — host planning of GEMM+RS and GEMM+AR that needs no GPU: the path
// tables, the rule, the rank-rotated tile order and the column bands.
#include <algorithm>
#include <cstdint>

#include "flux/gemm_ar.h"
#include "flux/gemm_rs.h"
#include "flux/knobs.h"
#include "src/common/check.h"
#include "src/ops/common/fused_rule.h"
#include "src/ops/common/op_types.h"
#include "src/ops/common/path_table.h"
#include "src/ops/gemm_rs/gemm_rs_plan.h"

namespace flux {

namespace {
// Every GEMM+RS / GEMM+AR path runs every call the op accepts (no `supported` entries; the PathCall's
// shares_gpu is not read).
const ops::PathEntry<GemmRsImpl> kRsPaths[] = {{GemmRsImpl::kAuto, "auto"}, {GemmRsImpl::kFused, "fused"},
                                              {GemmRsImpl::kSequential, "sequential"},
                                              {GemmRsImpl::kDecomposed, "decomposed"}};
const ops::PathEntry<GemmArPath> kArPaths[] = {
    {GemmArPath::kAuto, "auto"},       {GemmArPath::kOneShot, "one_shot"},     {GemmArPath::kTwoShot, "two_shot"},
    {GemmArPath::kRsAg, "rs_ag"},      {GemmArPath::kSequential, "sequential"}, {GemmArPath::kDecomposed, "decomposed"}};

}  // namespace

const char* to_string(GemmRsImpl impl) { return ops::path_name(kRsPaths, impl); }
GemmRsImpl parse_gemm_rs_impl(const std::string& text) {
  return ops::parse_path(kRsPaths, text, "flux gemm_rs", "implementation");
}
const char* to_string(GemmArPath path) { return ops::path_name(kArPaths, path); }
GemmArPath parse_gemm_ar_path(const std::string& text) { return ops::parse_path(kArPaths, text, "flux gemm_ar", "path"); }

// The rule: W = 1 is the GEMM core into out (a reduce-scatter over one rank is the identity); otherwise
// the path the overlap model predicts fastest (src/ops/common/fused_rule.h, reasons there).
GemmRsImpl choose_gemm_rs_impl(int64_t m, int64_t n, int64_t k_per_rank, int world_size, std::string* reason,
                               int sm_count, DType dtype, int reduce_sms, int64_t hbm_bytes_per_s) {
  const std::string best = ops::rule_choose(ops::FusedOp::kGemmRs, m, n, k_per_rank, world_size,
                                            ops::rule_context(sm_count, dtype, reduce_sms, hbm_bytes_per_s), {}, reason);
  return parse_gemm_rs_impl(best);
}

GemmArPath choose_gemm_ar_path(int64_t m, int64_t n, int64_t k_per_rank, int world_size, std::string* reason,
                               int sm_count, DType dtype, int pull_sms, int64_t hbm_bytes_per_s) {
  const std::string best = ops::rule_choose(ops::FusedOp::kGemmAr, m, n, k_per_rank, world_size,
                                            ops::rule_context(sm_count, dtype, pull_sms, hbm_bytes_per_s), {}, reason);
  return best == "fused" ? GemmArPath::kOneShot : parse_gemm_ar_path(best);  // the model's "fused" is one-shot
}

namespace ops {

int32_t auto_col_bands(int64_t n, int64_t k_per_rank, int64_t segment_rows, int64_t l2_bytes, int32_t units_n,
                       int64_t b_elem_bytes) {
  // One band of B (n / bands x K x its element bytes) and of the fp32 accumulator (segment_rows x n / bands x 4)
  // together in half the L2: every segment of the band then reuses them instead of streaming all of B
  // once per segment (measured: the segmented order without bands cost up to 26% at short segments).
  const double band_bytes = double(n) * double(k_per_rank) * double(b_elem_bytes) + double(segment_rows) * double(n) * 4.0;
  const double budget = std::max<double>(double(l2_bytes) / 2.0, 1.0);
  int64_t bands = static_cast<int64_t>(band_bytes / budget) + 1;
  bands = std::min<int64_t>(bands, std::max(units_n, 1));
  return static_cast<int32_t>(std::clamp<int64_t>(bands, 1, kMaxColBands));
}

namespace {

// The fused paths' tile order: `segments` row segments of `segment_rows`, the ring starting at
// `first_segment`, and column bands (given, or auto: a band of B and of the accumulator in half the L2).
void fused_order(GemmRsLayout& out, const GemmRsDesc& desc, const GemmSelection& gemm, int64_t l2_bytes,
                 int32_t reduce_sms, int32_t col_bands, int32_t segments, int32_t first_segment) {
  out.reduce_sms = reduce_sms;
  out.order.segments = segments;
  out.order.first_segment = first_segment;
  out.order.segment_rows = out.segment_rows;
  const int64_t units_n = (gemm.tiles_n + gemm.config.cluster_n - 1) / gemm.config.cluster_n;
  out.col_bands = col_bands > 0 ? std::min<int32_t>(col_bands, static_cast<int32_t>(std::max<int64_t>(units_n, 1)))
                                : auto_col_bands(desc.n, desc.k_per_rank, out.segment_rows, l2_bytes,
                                                 static_cast<int32_t>(units_n), int64_t(dtype_size(desc.dtype)));
  out.order.col_bands = out.col_bands;
}

}  // namespace

GemmRsLayout plan_gemm_rs(int64_t m, const GemmRsDesc& desc, int world_size, int rank, const GemmSelection& gemm,
                          const DeviceLimits& limits, int32_t reduce_sms, int32_t col_bands, GemmRsImpl forced) {
  check_call_rows("flux gemm_rs", m, desc.max_m, world_size, true);
  GemmRsLayout out;
  out.m = m;
  out.segment_rows = m / world_size;
  out.gemm = gemm;
  out.impl = ops::resolve_path(
      kRsPaths, forced, "FLUX_GEMM_RS_IMPL / GemmRsOptions::impl", PathCall{m, world_size, false, desc.scale},
      [&] {
        return choose_gemm_rs_impl(m, desc.n, desc.k_per_rank, world_size, &out.reason, limits.sm_count, desc.dtype,
                                   reduce_sms, limits.hbm_bytes_per_s);
      },
      &out.reason);
  if (out.impl == GemmRsImpl::kFused && world_size > 1) {
    // Rank r computes segment r+1 first and its own segment last (a ring), so at each step every rank
    // feeds a different destination, and the reduction of segment r takes source r-1-t at step t.
    fused_order(out, desc, gemm, limits.l2_bytes, reduce_sms, col_bands, world_size, (rank + 1) % world_size);
  }
  return out;
}

GemmRsLayout plan_gemm_ar(int64_t m, const GemmRsDesc& desc, int world_size, int rank, const GemmSelection& gemm,
                          const DeviceLimits& limits, int32_t reduce_sms, int32_t col_bands, GemmArPath forced) {
  check_call_rows("flux gemm_ar", m, desc.max_m, world_size, false);
  GemmRsLayout out;
  out.m = m;
  out.segment_rows = m;
  out.gemm = gemm;
  const GemmArPath path = ops::resolve_path(
      kArPaths, forced, "FLUX_GEMM_AR_PATH / GemmArOptions::path", PathCall{m, world_size, false, desc.scale},
      [&] {
        const GemmArPath chosen = choose_gemm_ar_path(m, desc.n, desc.k_per_rank, world_size, &out.reason,
                                                      limits.sm_count, desc.dtype, reduce_sms,
                                                      limits.hbm_bytes_per_s);
        out.reason = "all-reduce, " + out.reason;
        return chosen;
      },
      &out.reason);
  out.impl = path == GemmArPath::kSequential   ? GemmRsImpl::kSequential
             : path == GemmArPath::kDecomposed ? GemmRsImpl::kDecomposed
                                               : GemmRsImpl::kFused;
  if (world_size > 1 && path == GemmArPath::kOneShot) {
    // Every rank the same order: the pull kernel takes each tile from every rank as it is published.
    out.shots = 1;
    fused_order(out, desc, gemm, limits.l2_bytes, reduce_sms, col_bands, 1, 0);
  } else if (world_size > 1 && (path == GemmArPath::kTwoShot || path == GemmArPath::kRsAg)) {
    // GEMM+RS's ring over segments of ceil(M / W) rows (the last ones shorter or empty when W does not
    // divide M): rank r sums segment r, which its peers' GEMMs produce first. rs_ag: the same, its
    // all-gather after the join.
    out.shots = 2;
    out.gather_after = path == GemmArPath::kRsAg;
    out.segment_rows = (m + world_size - 1) / world_size;
    fused_order(out, desc, gemm, limits.l2_bytes, reduce_sms, col_bands, world_size, (rank + 1) % world_size);
  }
  return out;
}

}  // namespace ops
}  // namespace flux
