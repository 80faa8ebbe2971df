// tests/ops/test_ag_gemm_plan.cpp — AG+GEMM planning without a GPU: the rule (the overlap model's, tests/ops/test_fused_rule.cpp), the
// order (local shard first, then the ring), the SM split of ranks sharing a GPU.
#include <gtest/gtest.h>

#include <string>

#include "flux/ag_gemm.h"
#include "flux/gemm_rs.h"
#include "src/ops/ag_gemm/ag_gemm_plan.h"
#include "src/ops/common/sm_budget.h"
#include "tests/support/cpu_support.h"

namespace {

const flux::DeviceLimits kH200 = flux::testing::h200_limits();

TEST(AgGemmPlan, RuleAndReasons) {
  std::string why;
  EXPECT_EQ(flux::choose_ag_gemm_impl(4096, 6144, 12288, 1, false, &why), flux::AgGemmImpl::kFused);
  EXPECT_NE(why.find("one rank"), std::string::npos) << why;
  EXPECT_EQ(flux::choose_ag_gemm_impl(64, 256, 256, 4, false, &why), flux::AgGemmImpl::kSequential);
  // Larger shapes: the overlap model's ranking (tests/ops/test_fused_rule.cpp).
  EXPECT_EQ(flux::parse_ag_gemm_impl("fused_ce"), flux::AgGemmImpl::kFusedCopyEngine);
  EXPECT_THROW(flux::parse_ag_gemm_impl("nccl"), flux::InvalidArgument);
}

// The plan ranks the paths with the device's own GEMM rates: an H100's bandwidth reaches the rule.
TEST(AgGemmPlan, TheRuleSeesTheDevicesBandwidth) {
  const flux::DeviceLimits h100 = flux::testing::h100_limits();
  flux::AgGemmDesc desc{16384, 6144, 12288, flux::DType::kBF16, flux::WeightLayout::kNK};
  std::string why;
  flux::choose_ag_gemm_impl(8192, desc.n_per_rank, desc.k, 4, false, &why, 132, desc.dtype, 8, true,
                            h100.hbm_bytes_per_s);
  EXPECT_EQ(flux::ops::plan_ag_gemm(8192, desc, 4, 0, false, 1, h100, 8, flux::AgGemmImpl::kAuto).reason, why);
}

TEST(AgGemmPlan, OrderStartsAtTheLocalShard) {
  flux::AgGemmDesc desc{16384, 6144, 12288, flux::DType::kBF16, flux::WeightLayout::kNK};
  for (int w : {2, 3, 8}) {
    for (int r = 0; r < w; ++r) {
      auto L = flux::ops::plan_ag_gemm(1024 * w, desc, w, r, false, 1, kH200, 8, flux::AgGemmImpl::kAuto);
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
    flux::ops::plan_ag_gemm(2048, desc, 2, 0, true, 2, kH200, 8, flux::AgGemmImpl::kFusedCopyEngine);
    FAIL() << "fused_ce accepted with ranks sharing a GPU";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("one GPU per rank"), std::string::npos) << e.what();
  }
  EXPECT_THROW(flux::ops::plan_ag_gemm(2047, desc, 2, 0, false, 1, kH200, 8, flux::AgGemmImpl::kAuto), flux::InvalidArgument);
}

// Which paths a call can take (ag_gemm_path_supported): fused_ce needs one GPU per rank, decomposed with FP8
// per-row scales needs M / W a multiple of 4; every path runs at W = 1; a forced path that cannot run is refused
// with the reason, and the rule never picks one.
TEST(AgGemmPlan, PathsACallCanTake) {
  flux::AgGemmDesc fp8{4096, 6144, 12288, flux::DType::kE4M3, flux::WeightLayout::kNK};
  fp8.scale = flux::ScaleKind::kPerRowCol;
  std::string why;
  using flux::AgGemmImpl;
  EXPECT_FALSE(flux::ops::ag_gemm_path_supported(AgGemmImpl::kFusedCopyEngine, fp8, 2048, 2, true, &why));
  EXPECT_NE(why.find("fused_ce needs one GPU per rank"), std::string::npos) << why;
  EXPECT_TRUE(flux::ops::ag_gemm_path_supported(AgGemmImpl::kFusedCopyEngine, fp8, 2048, 2, false, nullptr));
  EXPECT_FALSE(flux::ops::ag_gemm_path_supported(AgGemmImpl::kDecomposed, fp8, 132, 2, false, &why));  // M / W = 66
  EXPECT_NE(why.find("M / W = 66"), std::string::npos) << why;
  EXPECT_TRUE(flux::ops::ag_gemm_path_supported(AgGemmImpl::kDecomposed, fp8, 128, 2, false, nullptr));
  for (AgGemmImpl impl : {AgGemmImpl::kFused, AgGemmImpl::kFusedCopyEngine, AgGemmImpl::kSequential, AgGemmImpl::kDecomposed}) {
    EXPECT_TRUE(flux::ops::ag_gemm_path_supported(impl, fp8, 66, 1, true, nullptr)) << flux::to_string(impl);
  }
  try {
    flux::ops::plan_ag_gemm(132, fp8, 2, 0, false, 1, kH200, 8, AgGemmImpl::kDecomposed);
    FAIL() << "decomposed with per-row scales at M / W = 66 accepted";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 4"), std::string::npos) << e.what();
  }
  for (int64_t m : {int64_t(132), int64_t(1028), int64_t(4092)}) {  // M / W = 66, 514, 2046: decomposed cannot run
    const auto L = flux::ops::plan_ag_gemm(m, fp8, 2, 0, false, 1, kH200, 8, AgGemmImpl::kAuto);
    EXPECT_NE(L.impl, AgGemmImpl::kDecomposed) << m << ": " << L.reason;
  }
}

}  // namespace
