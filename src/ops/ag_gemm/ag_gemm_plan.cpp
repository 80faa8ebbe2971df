// src/ops/ag_gemm/ag_gemm_plan.cpp — host planning of AG+GEMM that needs no GPU.
#include "src/ops/ag_gemm/ag_gemm_plan.h"

#include <algorithm>

#include "src/common/check.h"
#include "src/ops/common/fused_rule.h"
#include "src/ops/common/op_types.h"
#include "src/ops/common/path_table.h"
#include "src/ops/common/sm_budget.h"

namespace flux {

namespace {
// fused_ce: a copy engine gathers; ranks sharing a GPU would need an SM the waiting GEMM holds.
bool fused_ce_supported(const ops::PathCall& call, std::string* why) {
  if (!call.shares_gpu) return true;
  if (why) {
    *why = "flux ag_gemm: fused_ce needs one GPU per rank (ranks here share a GPU, and a same-GPU copy needs an SM the "
           "waiting GEMM holds); use fused, sequential or decomposed";
  }
  return false;
}

// FP8 per-row scales: the decomposed path's one cuBLASLt GEMM per shard reads that shard's row scales at an
// offset of M / W x 4 bytes, which the scale vectors' 16-byte alignment allows only for shards of 4k rows.
bool decomposed_supported(const ops::PathCall& call, std::string* why) {
  const int64_t shard = call.m / call.world_size;
  if (call.scale != ScaleKind::kPerRowCol || shard % 4 == 0) return true;
  if (why) {
    *why = detail::cat("flux ag_gemm: the decomposed path with per-row FP8 scales needs M / W a multiple of 4 "
                       "(16-byte aligned scale rows per shard); M / W = ", shard, " (use fused or sequential)");
  }
  return false;
}

const ops::PathEntry<AgGemmImpl> kPaths[] = {{AgGemmImpl::kAuto, "auto"},
                                             {AgGemmImpl::kFused, "fused"},
                                             {AgGemmImpl::kFusedCopyEngine, "fused_ce", fused_ce_supported},
                                             {AgGemmImpl::kSequential, "sequential"},
                                             {AgGemmImpl::kDecomposed, "decomposed", decomposed_supported}};
}  // namespace

const char* to_string(AgGemmImpl impl) { return ops::path_name(kPaths, impl); }
AgGemmImpl parse_ag_gemm_impl(const std::string& text) {
  return ops::parse_path(kPaths, text, "flux ag_gemm", "implementation");
}

// The rule: W = 1, the gather is the identity (the GEMM core reads the shard directly); otherwise the
// path the overlap model predicts fastest (src/ops/common/fused_rule.h, reasons there), fused meaning
// kFused (SM gather): it works whether or not ranks share a GPU. kFusedCopyEngine frees the gather's SMs
// but needs one GPU per rank and is not in the model; which of the two wins on NVLink is issue 6's
// measurement.
AgGemmImpl choose_ag_gemm_impl(int64_t m, int64_t n_per_rank, int64_t k, int world_size, bool shares_gpu,
                               std::string* reason, int sm_count, DType dtype, int gather_sms, bool decomposed_ok,
                               int64_t hbm_bytes_per_s) {
  (void)shares_gpu;
  const std::string best = ops::rule_choose(
      ops::FusedOp::kAgGemm, m, n_per_rank, k, world_size,
      ops::rule_context(sm_count, dtype, gather_sms, hbm_bytes_per_s),
      [&](const std::string& path) { return decomposed_ok || path != "decomposed"; }, reason);
  if (best == "fused" && world_size > 1 && reason) *reason += " (fused: the SM gather)";
  return parse_ag_gemm_impl(best);
}

namespace ops {

int ag_gemm_ce_gemm_sms(int sm_count, bool shares_gpu, int gemm_sms, int gather_sms) {
  return shares_gpu ? gemm_sms + gather_sms : std::max(sm_count - 1, 1);
}

bool ag_gemm_path_supported(AgGemmImpl impl, const AgGemmDesc& desc, int64_t m, int world_size, bool shares_gpu,
                             std::string* why) {
  return path_supported(kPaths, impl, PathCall{m, world_size, shares_gpu, desc.scale}, why);
}

AgGemmLayout plan_ag_gemm(int64_t m, const AgGemmDesc& desc, int world_size, int rank, bool shares_gpu,
                          int ranks_on_gpu, const DeviceLimits& limits, int gather_sms, AgGemmImpl forced) {
  const int sm_count = limits.sm_count;
  check_call_rows("flux ag_gemm", m, desc.max_m, world_size, true);
  AgGemmLayout out;
  out.m = m;
  out.shard_rows = m / world_size;
  const PathCall call{m, world_size, shares_gpu, desc.scale};
  out.impl = ops::resolve_path(
      kPaths, forced, "FLUX_AG_GEMM_IMPL / AgGemmOptions::impl", call,
      [&] {
        return choose_ag_gemm_impl(m, desc.n_per_rank, desc.k, world_size, shares_gpu, &out.reason, sm_count,
                                   desc.dtype, gather_sms,
                                   path_supported(kPaths, AgGemmImpl::kDecomposed, call, nullptr),
                                   limits.hbm_bytes_per_s);
      },
      &out.reason);
  const SmSplit split = fused_sm_split(sm_count, shares_gpu ? ranks_on_gpu : 1, gather_sms);
  out.gemm_sms = split.gemm_sms;
  out.gather_sms = split.helper_sms;
  if (out.impl == AgGemmImpl::kFusedCopyEngine) {
    out.gemm_sms = ag_gemm_ce_gemm_sms(sm_count, shares_gpu, out.gemm_sms, out.gather_sms);
    out.gather_sms = 0;
  }
  if (world_size > 1) {
    // The local shard first (already in place), then the shards in the order they arrive.
    out.order.segments = world_size;
    out.order.first_segment = rank;
    out.order.segment_rows = out.shard_rows;
  }
  return out;
}

}  // namespace ops
}  // namespace flux
