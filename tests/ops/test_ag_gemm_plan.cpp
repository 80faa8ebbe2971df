// tests/ops/test_ag_gemm_plan.cpp — AG+GEMM planning without a GPU: the rule (the same as GEMM+RS's), the
// order (local shard first, then the ring), the SM split of ranks sharing a GPU.
#include <gtest/gtest.h>

#include <string>

#include "flux/ag_gemm.h"
#include "flux/gemm_rs.h"
#include "src/ops/ag_gemm/ag_gemm_plan.h"
#include "src/ops/common/sm_budget.h"

namespace {

TEST(AgGemmPlan, RuleAndReasons) {
  std::string why;
  EXPECT_EQ(flux::choose_ag_gemm_impl(4096, 6144, 12288, 1, false, &why), flux::AgGemmImpl::kFused);
  EXPECT_NE(why.find("one rank"), std::string::npos) << why;
  EXPECT_EQ(flux::choose_ag_gemm_impl(64, 256, 256, 4, false, &why), flux::AgGemmImpl::kSequential);
  EXPECT_EQ(flux::choose_ag_gemm_impl(8192, 6144, 12288, 8, false, &why), flux::AgGemmImpl::kFused);
  EXPECT_EQ(flux::parse_ag_gemm_impl("fused_ce"), flux::AgGemmImpl::kFusedCopyEngine);
  EXPECT_THROW(flux::parse_ag_gemm_impl("nccl"), flux::InvalidArgument);
}

// One fused-or-sequential rule for both ops (src/ops/common/fused_rule.h): the same per-rank GEMM gets the
// same decision from either, on both sides of the 2 GFLOP threshold, and the reason says which side.
TEST(AgGemmPlan, TheRuleIsGemmRsRule) {
  for (int64_t m : {int64_t(64), int64_t(127), int64_t(128), int64_t(1024)}) {
    for (int64_t n : {int64_t(1024), int64_t(8192)}) {
      const int64_t k = 1024;  // 2 GFLOP at m x n = 2^30 / 2^10: m = 128 with n = 8192 is just over it
      std::string ag_why, rs_why;
      const bool ag = flux::choose_ag_gemm_impl(m, n, k, 4, false, &ag_why) == flux::AgGemmImpl::kFused;
      const bool rs = flux::choose_gemm_rs_impl(m, n, k, 4, &rs_why) == flux::GemmRsImpl::kFused;
      EXPECT_EQ(ag, rs) << m << "x" << n << "x" << k << ": " << ag_why << " | " << rs_why;
      EXPECT_EQ(ag, 2.0 * m * n * k >= 2e9) << ag_why;
      EXPECT_NE(ag_why.find(ag ? "rule: fused" : "rule: sequential"), std::string::npos) << ag_why;
    }
  }
}

TEST(AgGemmPlan, OrderStartsAtTheLocalShard) {
  flux::AgGemmDesc desc{16384, 6144, 12288, flux::DType::kBF16, flux::WeightLayout::kNK};
  for (int w : {2, 3, 8}) {
    for (int r = 0; r < w; ++r) {
      auto L = flux::ops::plan_ag_gemm(1024 * w, desc, w, r, false, 1, 132, 8, flux::AgGemmImpl::kAuto);
      EXPECT_EQ(L.order.segments, w);
      EXPECT_EQ(L.order.first_segment, r);
      EXPECT_EQ(L.order.segment_rows, 1024);
      EXPECT_EQ(L.gather_sms, 8);
      EXPECT_EQ(L.gemm_sms, 124);
    }
  }
}

TEST(AgGemmPlan, RanksSharingAGpuSplitItsSms) {
  flux::ops::SmSplit s = flux::ops::fused_sm_split(132, 8, 8);  // 16 SMs per rank: gather <= 4
  EXPECT_EQ(s.helper_sms, 4);
  EXPECT_EQ(s.gemm_sms, 12);
  EXPECT_LE(8 * (s.gemm_sms + s.helper_sms), 132);
  s = flux::ops::fused_sm_split(132, 1, 8);
  EXPECT_EQ(s.helper_sms, 8);
  EXPECT_EQ(s.gemm_sms, 124);
  EXPECT_EQ(flux::ops::ranks_on_gpu({"a", "b", "a", "a"}, 2), 3);
  EXPECT_EQ(flux::ops::ranks_on_gpu({"a", "b", "a", "a"}, 1), 1);
  EXPECT_EQ(flux::ops::ranks_on_gpu({}, 0), 1);
  flux::AgGemmDesc desc{4096, 1024, 512, flux::DType::kFP16, flux::WeightLayout::kKN};
  try {
    flux::ops::plan_ag_gemm(2048, desc, 2, 0, true, 2, 132, 8, flux::AgGemmImpl::kFusedCopyEngine);
    FAIL() << "fused_ce accepted with ranks sharing a GPU";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("one GPU per rank"), std::string::npos) << e.what();
  }
  EXPECT_THROW(flux::ops::plan_ag_gemm(2047, desc, 2, 0, false, 1, 132, 8, flux::AgGemmImpl::kAuto), flux::InvalidArgument);
}

}  // namespace
