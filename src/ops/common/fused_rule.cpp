// src/ops/common/fused_rule.cpp — see fused_rule.h.
#include "src/ops/common/fused_rule.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "src/common/check.h"

namespace flux::ops {

namespace {

// The GEMM core's predicted time for m x n x k on `sms` SMs (its heuristic's own model).
double predicted_gemm_us(int64_t m, int64_t n, int64_t k, int sms, DType dtype) {
  DeviceLimits limits;
  limits.sm_count = std::max(sms, 1);
  const GemmSelection sel = select_gemm_config(m, n, k, limits, {}, 0, /*allow_swap_ab=*/true, dtype);
  if (sel.predicted_us > 0) return sel.predicted_us;
  // Not from the model (cannot happen for a heuristic pick; kept so the rule never divides by zero): a
  // roofline at the H200's dense bf16 rate and HBM bandwidth.
  const double es = dtype == DType::kE4M3 ? 1.0 : 2.0;
  const double flop_us = 2.0 * double(m) * double(n) * double(k) / (990e12 * sms / 132.0) * 1e6;
  const double bytes_us = (double(m) * double(k) + double(n) * double(k)) * es / 4.8e12 * 1e6;
  return std::max(flop_us, bytes_us) + 5.0;
}

}  // namespace

PathTimes rule_paths(FusedOp op, int64_t m, int64_t n, int64_t k, int world, const RuleContext& ctx) {
  FLUX_CHECK_ARG(world >= 2 && m >= 1 && n >= 1 && k >= 1, "flux rule: shape ", m, "x", n, "x", k, " at W = ", world,
                 " (expected every dimension >= 1 and W >= 2)");
  FLUX_CHECK_ARG(ctx.sm_count > ctx.helper_sms + kRuleCollectiveSms && ctx.helper_sms >= 1 && ctx.decomposed_chunks >= 1,
                 "flux rule: ", ctx.sm_count, " SMs, ", ctx.helper_sms, " helper SMs, ", ctx.decomposed_chunks,
                 " chunks (expected helper SMs >= 1, SMs > helper + ", kRuleCollectiveSms, ", chunks >= 1)");
  ComponentRates r;
  r.gemm_us_all_sms = predicted_gemm_us(m, n, k, ctx.sm_count, ctx.dtype);
  r.gemm_us_reduced_sms = predicted_gemm_us(m, n, k, ctx.sm_count - ctx.helper_sms, ctx.dtype);
  r.pull_kernel_gbps = kRulePullGbpsPerSm * ctx.helper_sms;
  r.pull_bytes_in_flight = 64e6;  // the kernels' own rate above already holds their in-flight limit on local memory
  r.collective_gbps = 0;          // 80% of the link
  r.fused_fixed_us = kRuleFusedFixedUs;
  // AG+GEMM's decomposed path: one chunk per shard (M / W rows); the others: N / chunks columns.
  const int chunks = op == FusedOp::kAgGemm ? world : ctx.decomposed_chunks;
  const int collective_sms = ctx.sm_count - kRuleCollectiveSms;
  r.gemm_us_chunk = op == FusedOp::kAgGemm
                        ? predicted_gemm_us(std::max<int64_t>(m / world, 1), n, k, collective_sms, ctx.dtype)
                        : predicted_gemm_us(m, std::max<int64_t>(n / chunks, 8), k, collective_sms, ctx.dtype);
  r.elem_bytes = op == FusedOp::kAgGemm ? int(dtype_size(ctx.dtype)) : ctx.out_bytes;
  return predict_paths(op, m, n, k, world, r, LinkSpec{}, chunks);
}

namespace {

// Every path of `op` with its predicted time, fastest first; ties in predict_paths' order (so the first is
// its `best`). Names as PathTimes::best.
std::vector<std::pair<double, const char*>> ranked_paths(FusedOp op, const PathTimes& t) {
  std::vector<std::pair<double, const char*>> paths{{t.fused_us, "fused"}};
  if (op == FusedOp::kGemmAr) {
    paths.emplace_back(t.two_shot_us, "two_shot");
    paths.emplace_back(t.rs_ag_us, "rs_ag");
  }
  paths.emplace_back(t.sequential_us, "sequential");
  paths.emplace_back(t.decomposed_us, "decomposed");
  std::stable_sort(paths.begin(), paths.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return paths;
}

}  // namespace

std::string rule_pick(FusedOp op, const PathTimes& t, const std::function<bool(const std::string&)>& usable,
                      std::string* reason) {
  const auto paths = ranked_paths(op, t);
  std::string text = "rule (overlap model, predicted):";
  std::string picked, skipped;
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string name = paths[i].second;
    const bool ok = !usable || usable(name);
    if (ok && picked.empty()) picked = name;
    if (!ok) skipped += " " + name;
    const char* shown = op == FusedOp::kGemmAr && name == "fused" ? "one_shot" : paths[i].second;
    text += detail::cat(i == 0 ? " " : " < ", shown, " ", static_cast<int64_t>(paths[i].first * 10) / 10.0, " us");
  }
  FLUX_CHECK(!picked.empty(), "flux rule: no usable path (skipped:", skipped, ")");
  if (!skipped.empty()) text += detail::cat("; not usable for this call:", skipped);
  if (reason) *reason = text;
  return picked;
}

std::string rule_choose(FusedOp op, int64_t m, int64_t n, int64_t k, int world, int sm_count, DType dtype,
                        int helper_sms, const std::function<bool(const std::string&)>& usable, std::string* reason) {
  if (world == 1) {
    if (reason) {
      *reason = op == FusedOp::kAgGemm ? "one rank: the all-gather is the identity, the GEMM core reads the shard directly"
                : op == FusedOp::kGemmRs
                    ? "one rank: the reduce-scatter is the identity, the GEMM core writes out directly"
                    : "one rank: the all-reduce is the identity, the GEMM core writes out directly";
    }
    return "fused";
  }
  RuleContext ctx;
  ctx.sm_count = sm_count;
  ctx.helper_sms = helper_sms;
  ctx.dtype = dtype;
  return rule_pick(op, rule_paths(op, m, n, k, world, ctx), usable, reason);
}

}  // namespace flux::ops
