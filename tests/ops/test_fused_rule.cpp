// tests/ops/test_fused_rule.cpp — the fused ops' path rule (src/ops/common/fused_rule.h): it feeds the
// overlap model with the GEMM core's own predictions, picks the fastest predicted path (first on ties),
// skips paths a call cannot take, says the ranking, and the three ops' choose_* functions follow it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "flux/ag_gemm.h"
#include "flux/error.h"
#include "flux/gemm.h"
#include "flux/gemm_ar.h"
#include "flux/gemm_rs.h"
#include "src/ops/common/fused_rule.h"
#include "tests/support/cpu_support.h"

namespace {

using flux::ops::FusedOp;
using flux::ops::PathTimes;
using flux::ops::RuleContext;

double fastest(FusedOp op, const PathTimes& t) {
  double best = std::min({t.fused_us, t.sequential_us, t.decomposed_us});
  if (op == FusedOp::kGemmAr) best = std::min({best, t.two_shot_us, t.rs_ag_us});
  return best;
}

double time_of(const PathTimes& t, const std::string& path) {
  if (path == "fused") return t.fused_us;
  if (path == "two_shot") return t.two_shot_us;
  if (path == "rs_ag") return t.rs_ag_us;
  if (path == "sequential") return t.sequential_us;
  return t.decomposed_us;
}

// The GEMM times are the GEMM core heuristic's, on all SMs and on the SMs the helper kernel leaves.
TEST(FusedRule, FedByTheGemmCoresPredictions) {
  RuleContext ctx;
  const PathTimes t = flux::ops::rule_paths(FusedOp::kGemmRs, 4096, 12288, 6144, 4, ctx);
  flux::DeviceLimits all, reduced;
  all.sm_count = 132;
  reduced.sm_count = 124;
  const double g_all = flux::select_gemm_config(4096, 12288, 6144, all).predicted_us;
  const double g_k = flux::select_gemm_config(4096, 12288, 6144, reduced).predicted_us;
  ASSERT_GT(g_all, 0);
  // sequential = the GEMM on all SMs + the collective (80% of 450 GB/s) + 3 us of latency.
  const double comm = 3.0 * 1024 * 12288 * 2 / 360e9 * 1e6 + 3;
  EXPECT_NEAR(t.sequential_us, g_all + comm, 1e-6);
  // fused = fixed + max(G_k + one step's pulls, one GEMM step + all pulls), pulls at 30 GB/s per helper SM.
  const double pulls = 3.0 * 1024 * 12288 * 2 / (30e9 * 8) * 1e6 + 3;
  EXPECT_NEAR(t.fused_us, flux::ops::kRuleFusedFixedUs + std::max(g_k + pulls / 3, g_k / 4 + pulls), 1e-6);
  // e4m3 AG+GEMM moves 1-byte elements of A.
  RuleContext fp8 = ctx;
  fp8.dtype = flux::DType::kE4M3;
  EXPECT_DOUBLE_EQ(flux::ops::rule_paths(FusedOp::kAgGemm, 4096, 6144, 12288, 4, fp8).comm_bytes,
                   3.0 * 1024 * 12288 * 1);
  EXPECT_THROW(flux::ops::rule_paths(FusedOp::kGemmRs, 4096, 12288, 6144, 1, ctx), flux::InvalidArgument);
}

// Over a grid of shapes and W, every op's pick is the fastest predicted path, and its reason ranks them
// with the pick first.
TEST(FusedRule, PicksTheFastestPredictedPath) {
  for (FusedOp op : {FusedOp::kGemmRs, FusedOp::kAgGemm, FusedOp::kGemmAr}) {
    for (int w : {2, 4, 8}) {
      for (int64_t m : {int64_t(8), int64_t(128), int64_t(1024), int64_t(8192)}) {
        for (int64_t n : {int64_t(1024), int64_t(12288)}) {
          const int64_t k = 6144;
          const PathTimes t = flux::ops::rule_paths(op, m, n, k, w, RuleContext{});
          std::string why;
          const std::string pick = flux::ops::rule_pick(op, t, {}, &why);
          EXPECT_DOUBLE_EQ(time_of(t, pick), fastest(op, t)) << why;
          EXPECT_EQ(pick, t.best) << why;
          const std::string shown = op == FusedOp::kGemmAr && pick == "fused" ? "one_shot" : pick;
          EXPECT_EQ(why.find("rule (overlap model, predicted): " + shown + " "), 0u) << why;
        }
      }
    }
  }
}

TEST(FusedRule, SkipsPathsTheCallCannotTake) {
  const PathTimes t = flux::ops::rule_paths(FusedOp::kAgGemm, 8192, 6144, 12288, 8, RuleContext{});
  std::string why;
  const std::string pick =
      flux::ops::rule_pick(FusedOp::kAgGemm, t, [&](const std::string& p) { return p != t.best; }, &why);
  EXPECT_NE(pick, t.best);
  EXPECT_NE(why.find("not usable for this call: " + t.best), std::string::npos) << why;
  EXPECT_THROW(flux::ops::rule_pick(FusedOp::kAgGemm, t, [](const std::string&) { return false; }, nullptr),
               flux::Error);
}

// The GEMM times come from the device's own rate table: an H100's HBM bandwidth takes the GEMM heuristic's H100
// large-M table (a context that reports none, the default table: the H200's), and every op's choose_* passes the
// device's bandwidth on (its ranking is that device's).
TEST(FusedRule, GemmTimesFollowTheDevicesBandwidth) {
  const flux::DeviceLimits h100 = flux::testing::h100_limits();
  const flux::DeviceLimits h200 = flux::testing::h200_limits();
  const int64_t m = 8192, n = 12288, k = 6144;
  RuleContext on_h100, on_h200;
  on_h100.hbm_bytes_per_s = h100.hbm_bytes_per_s;
  on_h200.hbm_bytes_per_s = h200.hbm_bytes_per_s;
  const PathTimes t100 = flux::ops::rule_paths(FusedOp::kGemmRs, m, n, k, 4, on_h100);
  const PathTimes t200 = flux::ops::rule_paths(FusedOp::kGemmRs, m, n, k, 4, on_h200);
  const double comm = 3.0 * (m / 4) * n * 2 / 360e9 * 1e6 + 3;
  EXPECT_NEAR(t100.sequential_us, flux::select_gemm_config(m, n, k, h100).predicted_us + comm, 1e-6);
  EXPECT_NEAR(t200.sequential_us, flux::select_gemm_config(m, n, k, h200).predicted_us + comm, 1e-6);
  EXPECT_GT(std::abs(t100.sequential_us - t200.sequential_us), 1e-3 * t200.sequential_us)
      << "the two tables should predict this shape differently";
  const PathTimes t_default = flux::ops::rule_paths(FusedOp::kGemmRs, m, n, k, 4, RuleContext{});
  EXPECT_DOUBLE_EQ(t_default.sequential_us, t200.sequential_us);

  std::string why, expected;
  flux::choose_gemm_rs_impl(m, n, k, 4, &why, 132, flux::DType::kBF16, 8, h100.hbm_bytes_per_s);
  flux::ops::rule_pick(FusedOp::kGemmRs, t100, {}, &expected);
  EXPECT_EQ(why, expected);
  flux::choose_gemm_ar_path(m, n, k, 4, &why, 132, flux::DType::kBF16, 8, h100.hbm_bytes_per_s);
  flux::ops::rule_pick(FusedOp::kGemmAr, flux::ops::rule_paths(FusedOp::kGemmAr, m, n, k, 4, on_h100), {}, &expected);
  EXPECT_EQ(why, expected);
  flux::choose_ag_gemm_impl(m, 6144, 12288, 4, false, &why, 132, flux::DType::kBF16, 8, true, h100.hbm_bytes_per_s);
  flux::ops::rule_pick(FusedOp::kAgGemm, flux::ops::rule_paths(FusedOp::kAgGemm, m, 6144, 12288, 4, on_h100), {},
                       &expected);
  EXPECT_EQ(why.substr(0, expected.size()), expected);  // AG+GEMM adds which fused path it means
}

// A small GEMM cannot hide the fused paths' fixed cost: every op goes sequential.
TEST(FusedRule, SmallGemmsGoSequential) {
  std::string why;
  EXPECT_EQ(flux::choose_gemm_rs_impl(64, 512, 256, 4, &why), flux::GemmRsImpl::kSequential) << why;
  EXPECT_EQ(flux::choose_ag_gemm_impl(64, 256, 256, 4, false, &why), flux::AgGemmImpl::kSequential) << why;
  EXPECT_EQ(flux::choose_gemm_ar_path(8, 8192, 1024, 4, &why), flux::GemmArPath::kSequential) << why;
  EXPECT_NE(why.find("rule (overlap model, predicted): sequential"), std::string::npos) << why;
}

// The ops' choose_* functions are the rule over their paths; W = 1 is the GEMM alone.
TEST(FusedRule, TheOpsFollowIt) {
  std::string why;
  EXPECT_EQ(flux::choose_gemm_ar_path(4096, 8192, 1024, 1, &why), flux::GemmArPath::kOneShot);
  EXPECT_NE(why.find("one rank"), std::string::npos) << why;
  for (int64_t m : {int64_t(64), int64_t(1024), int64_t(8192)}) {
    const PathTimes rs = flux::ops::rule_paths(FusedOp::kGemmRs, m, 12288, 6144, 8, RuleContext{});
    const flux::GemmRsImpl impl = flux::choose_gemm_rs_impl(m, 12288, 6144, 8, &why);
    EXPECT_EQ(std::string(flux::to_string(impl)), rs.best) << why;
    const PathTimes ar = flux::ops::rule_paths(FusedOp::kGemmAr, m, 12288, 6144, 8, RuleContext{});
    const flux::GemmArPath path = flux::choose_gemm_ar_path(m, 12288, 6144, 8, &why);
    EXPECT_EQ(std::string(flux::to_string(path)), ar.best == "fused" ? "one_shot" : ar.best) << why;
    const PathTimes ag = flux::ops::rule_paths(FusedOp::kAgGemm, m, 6144, 12288, 8, RuleContext{});
    const flux::AgGemmImpl ag_impl = flux::choose_ag_gemm_impl(m, 6144, 12288, 8, false, &why);
    EXPECT_EQ(std::string(flux::to_string(ag_impl)), ag.best) << why;
    // Without the decomposed path (FP8 per-row scales at M / W not a multiple of 4), never decomposed.
    EXPECT_NE(flux::choose_ag_gemm_impl(m, 6144, 12288, 8, false, &why, 132, flux::DType::kBF16, 8, false),
              flux::AgGemmImpl::kDecomposed)
        << why;
  }
}

}  // namespace
