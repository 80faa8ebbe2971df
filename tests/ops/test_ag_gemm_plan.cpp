// tests/ops/test_ag_gemm_plan.cpp — AG+GEMM planning without a GPU: the rule (the overlap model's, tests/ops/test_fused_rule.cpp), the
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
  // Larger shapes: the overlap model's ranking (tests/ops/test_fused_rule.cpp).
  EXPECT_EQ(flux::parse_ag_gemm_impl("fused_ce"), flux::AgGemmImpl::kFusedCopyEngine);
  EXPECT_THROW(flux::parse_ag_gemm_impl("nccl"), flux::InvalidArgument);
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
