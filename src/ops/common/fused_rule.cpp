// src/ops/common/fused_rule.cpp — see fused_rule.h.
#include "src/ops/common/fused_rule.h"

#include <algorithm>
#include <vector>

#include "src/common/check.h"

namespace flux::ops {

namespace {

// The GEMM core's predicted time for m x n x k on `sms` SMs of the device `ctx` describes (its heuristic's own
// model: the rate table of the device's HBM bandwidth).
double predicted_gemm_us(int64_t m, int64_t n, int64_t k, int sms, const RuleContext& ctx) {
  DeviceLimits limits;
  limits.sm_count = std::max(sms, 1);
  limits.hbm_bytes_per_s = ctx.hbm_bytes_per_s;
  const GemmSelection sel = select_gemm_config(m, n, k, limits, {}, 0, /*allow_swap_ab=*/true, ctx.dtype);
  // A heuristic pick always carries its model's time (max of compute and HBM terms: > 0 for any shape).
  FLUX_CHECK(sel.predicted_us > 0, "flux rule: the GEMM heuristic gave no predicted time for ", m, "x", n, "x", k);
  return sel.predicted_us;
}

}  // namespace

PathTimes rule_paths(FusedOp op, int64_t m, int64_t n, int64_t k, int world, const RuleContext& ctx) {
  FLUX_CHECK_ARG(world >= 2 && m >= 1 && n >= 1 && k >= 1, "flux rule: shape ", m, "x", n, "x", k, " at W = ", world,
                 " (expected every dimension >= 1 and W >= 2)");
  FLUX_CHECK_ARG(ctx.sm_count > ctx.helper_sms + kRuleCollectiveSms && ctx.helper_sms >= 1 && ctx.decomposed_chunks >= 1,
                 "flux rule: ", ctx.sm_count, " SMs, ", ctx.helper_sms, " helper SMs, ", ctx.decomposed_chunks,
                 " chunks (expected helper SMs >= 1, SMs > helper + ", kRuleCollectiveSms, ", chunks >= 1)");
  ComponentRates r;
  r.gemm_us_all_sms = predicted_gemm_us(m, n, k, ctx.sm_count, ctx);
  r.gemm_us_reduced_sms = predicted_gemm_us(m, n, k, ctx.sm_count - ctx.helper_sms, ctx);
  r.pull_kernel_gbps = kRulePullGbpsPerSm * ctx.helper_sms;
  r.pull_bytes_in_flight = 64e6;  // the kernels' own rate above already holds their in-flight limit on local memory
  r.collective_gbps = 0;          // 80% of the link
  r.fused_fixed_us = kRuleFusedFixedUs;
  // AG+GEMM's decomposed path: one chunk per shard (M / W rows); the others: N / chunks columns.
  const int chunks = op == FusedOp::kAgGemm ? world : ctx.decomposed_chunks;
  const int collective_sms = ctx.sm_count - kRuleCollectiveSms;
  r.gemm_us_chunk = op == FusedOp::kAgGemm
                        ? predicted_gemm_us(std::max<int64_t>(m / world, 1), n, k, collective_sms, ctx)
                        : predicted_gemm_us(m, std::max<int64_t>(n / chunks, 8), k, collective_sms, ctx);
  r.elem_bytes = op == FusedOp::kAgGemm ? int(dtype_size(ctx.dtype)) : ctx.out_bytes;
  return predict_paths(op, m, n, k, world, r, LinkSpec{}, chunks);
}

std::string rule_pick(FusedOp op, const PathTimes& t, const std::function<bool(const std::string&)>& usable,
                      std::string* reason) {
  // Fastest first; a stable sort keeps path_times' tie order, so the first is predict_paths' `best`.
  std::vector<PathTime> paths = path_times(op, t);
  std::stable_sort(paths.begin(), paths.end(), [](const PathTime& a, const PathTime& b) { return a.us < b.us; });
  std::string text = "rule (overlap model, predicted):";
  std::string picked, skipped;
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string name = paths[i].name;
    const bool ok = !usable || usable(name);
    if (ok && picked.empty()) picked = name;
    if (!ok) skipped += " " + name;
    const char* shown = op == FusedOp::kGemmAr && name == "fused" ? "one_shot" : paths[i].name;
    text += detail::cat(i == 0 ? " " : " < ", shown, " ", static_cast<int64_t>(paths[i].us * 10) / 10.0, " us");
  }
  FLUX_CHECK(!picked.empty(), "flux rule: no usable path (skipped:", skipped, ")");
  if (!skipped.empty()) text += detail::cat("; not usable for this call:", skipped);
  if (reason) *reason = text;
  return picked;
}

std::string rule_choose(FusedOp op, int64_t m, int64_t n, int64_t k, int world, const RuleContext& ctx,
                        const std::function<bool(const std::string&)>& usable, std::string* reason) {
  if (world == 1) {
    if (reason) {
      *reason = op == FusedOp::kAgGemm ? "one rank: the all-gather is the identity, the GEMM core reads the shard directly"
                : op == FusedOp::kGemmRs
                    ? "one rank: the reduce-scatter is the identity, the GEMM core writes out directly"
                    : "one rank: the all-reduce is the identity, the GEMM core writes out directly";
    }
    return "fused";
  }
  return rule_pick(op, rule_paths(op, m, n, k, world, ctx), usable, reason);
}

}  // namespace flux::ops
