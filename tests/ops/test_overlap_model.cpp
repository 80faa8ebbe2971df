// tests/ops/test_overlap_model.cpp — the overlap model's arithmetic (src/ops/common/overlap_model.h),
// against values worked out by hand: the bytes each op moves, the pull rate's three limits (kernel,
// link, bytes in flight by Little's law), each path's time, the best path and the hidden fraction, and
// bad inputs.
#include <gtest/gtest.h>

#include <algorithm>

#include "flux/error.h"
#include "src/ops/common/overlap_model.h"

namespace {

using flux::ops::ComponentRates;
using flux::ops::FusedOp;
using flux::ops::LinkSpec;
using flux::ops::PathTimes;

// The decomposed path: D chunks of G_c each, pipelined with the collective's chunks (c = its time without
// the latency / D, plus the latency), plus D launches.
double decomposed(double g_chunk, double comm_seq_us, double latency_us, int chunks, double launch_us) {
  const double c = (comm_seq_us - latency_us) / chunks + latency_us;
  return std::max(chunks * g_chunk + c, g_chunk + chunks * c) + chunks * launch_us;
}

ComponentRates rates() {
  ComponentRates r;
  r.gemm_us_all_sms = 1000;
  r.gemm_us_reduced_sms = 1060;
  r.pull_kernel_gbps = 300;
  r.pull_bytes_in_flight = 64e6;  // far more than any latency needs: not the limit
  r.collective_gbps = 360;
  r.fused_fixed_us = 10;
  r.chunk_launch_us = 5;
  return r;
}

TEST(OverlapModel, BytesEachOpMoves) {
  // GEMM+RS: the W-1 peers' partial tiles of this rank's M/W rows, N columns, 2 bytes.
  EXPECT_DOUBLE_EQ(flux::ops::fused_op_comm_bytes(FusedOp::kGemmRs, 8192, 12288, 6144, 8), 7.0 * 1024 * 12288 * 2);
  // AG+GEMM: the W-1 peers' shards of M/W rows, K columns.
  EXPECT_DOUBLE_EQ(flux::ops::fused_op_comm_bytes(FusedOp::kAgGemm, 8192, 6144, 12288, 8), 7.0 * 1024 * 12288 * 2);
  EXPECT_DOUBLE_EQ(flux::ops::fused_op_comm_bytes(FusedOp::kAgGemm, 4096, 1, 1000, 1), 0.0);
  // GEMM+AR one-shot: every one of the W-1 peers' whole M x N partials.
  EXPECT_DOUBLE_EQ(flux::ops::fused_op_comm_bytes(FusedOp::kGemmAr, 8192, 12288, 6144, 8), 7.0 * 8192 * 12288 * 2);
}

// GEMM+AR at W = 8: one-shot pulls 7 whole partials, two-shot 2 x 7/8 of one, NCCL's ring all-reduce moves
// 2 x 7/8 of one at the collective's rate. With these rates one-shot loses to NCCL, two-shot beats both
// (its second phase, 196 us, is not hidden), and the chunked NCCL path (hidden behind full-SM GEMMs) wins.
TEST(OverlapModel, GemmArOneShotTwoShotAndTheRing) {
  const int64_t m = 4096, n = 8192, k = 1024;
  const PathTimes t = flux::ops::predict_paths(FusedOp::kGemmAr, m, n, k, 8, rates(), LinkSpec{450, 3});
  const double matrix = double(m) * n * 2;                       // 64 MiB
  const double one_shot_comm = 7.0 * matrix / 300e9 * 1e6 + 3;   // at the kernel's 300 GB/s
  const double ring = 2.0 * 7 / 8 * matrix / 360e9 * 1e6 + 3;     // NCCL at 360 GB/s
  const double c1 = 7.0 / 8 * matrix / 300e9 * 1e6;              // one shot of two-shot
  EXPECT_NEAR(t.comm_fused_us, one_shot_comm, 1e-9);
  EXPECT_NEAR(t.comm_sequential_us, ring, 1e-9);
  EXPECT_NEAR(t.sequential_us, 1000 + ring, 1e-9);
  EXPECT_NEAR(t.fused_us, 10 + std::max(1060 + one_shot_comm / 7, 1060.0 / 8 + one_shot_comm), 1e-9);
  EXPECT_NEAR(t.two_shot_us, 10 + std::max(1060 + (c1 + 3) / 7, 1060.0 / 8 + c1 + 3) + c1 + 3, 1e-9);
  EXPECT_GT(t.fused_us, t.sequential_us);
  EXPECT_LT(t.two_shot_us, t.sequential_us);
  // The composition: two-shot's first shot, then the collective's all-gather of 7/8 of the matrix.
  EXPECT_NEAR(t.rs_ag_us, 10 + std::max(1060 + (c1 + 3) / 7, 1060.0 / 8 + c1 + 3) + 7.0 / 8 * matrix / 360e9 * 1e6 + 3,
              1e-9);
  EXPECT_LT(t.rs_ag_us, t.two_shot_us);  // NCCL's 360 GB/s beats the pull kernel's 300 for the second phase
  EXPECT_NEAR(t.decomposed_us, decomposed(250, ring, 3, 4, 5), 1e-9);
  EXPECT_EQ(t.best, "decomposed");
  EXPECT_NEAR(t.hidden_fraction, (t.sequential_us - t.rs_ag_us) / ring, 1e-12);
  // The other ops have no two-shot or composition time.
  EXPECT_DOUBLE_EQ(flux::ops::predict_paths(FusedOp::kGemmRs, m, n, k, 8, rates()).two_shot_us, 0.0);
  EXPECT_DOUBLE_EQ(flux::ops::predict_paths(FusedOp::kGemmRs, m, n, k, 8, rates()).rs_ag_us, 0.0);
  // A measured chunk GEMM (slower than G_all / D: narrower tiles, SMs left to the collective) replaces G_all / D.
  ComponentRates slow = rates();
  slow.gemm_us_chunk = 400;
  EXPECT_NEAR(flux::ops::predict_paths(FusedOp::kGemmAr, m, n, k, 8, slow, LinkSpec{450, 3}).decomposed_us,
              decomposed(400, ring, 3, 4, 5), 1e-9);
}

TEST(OverlapModel, GemmBoundGemmRs) {
  const PathTimes t = flux::ops::predict_paths(FusedOp::kGemmRs, 8192, 12288, 6144, 8, rates(), LinkSpec{450, 3});
  const double bytes = 7.0 * 1024 * 12288 * 2;
  EXPECT_DOUBLE_EQ(t.pull_gbps, 300);
  EXPECT_EQ(t.limit, "kernel");
  const double comm_fused = bytes / 300e9 * 1e6 + 3;  // 587.2 + 3 us
  const double comm_seq = bytes / 360e9 * 1e6 + 3;
  EXPECT_NEAR(t.comm_fused_us, comm_fused, 1e-9);
  EXPECT_NEAR(t.sequential_us, 1000 + comm_seq, 1e-9);
  // max(G_k + one comm step, one GEMM step + C) + fixed = max(1060 + 84.3, 132.5 + 590.2) + 10
  EXPECT_NEAR(t.fused_us, 10 + std::max(1060 + comm_fused / 7, 1060.0 / 8 + comm_fused), 1e-9);
  EXPECT_NEAR(t.decomposed_us, decomposed(250, comm_seq, 3, 4, 5), 1e-9);
  EXPECT_EQ(t.best, "decomposed");  // at these rates the chunked NCCL path edges out the fused one
  EXPECT_NEAR(t.hidden_fraction, (t.sequential_us - t.fused_us) / comm_seq, 1e-12);
  EXPECT_GT(t.hidden_fraction, 0.6);
}

TEST(OverlapModel, CommBoundAgGemmAndLittlesLaw) {
  ComponentRates r = rates();
  r.pull_bytes_in_flight = 256.0 * 1024;  // the gather on 8 SMs today: 8 x 1024 threads x 2 x 16 B
  const LinkSpec link{450, 3};
  const PathTimes t = flux::ops::predict_paths(FusedOp::kAgGemm, 8192, 6144, 12288, 8, r, link);
  EXPECT_EQ(t.limit, "in-flight");
  EXPECT_NEAR(t.pull_gbps, 256.0 * 1024 / 3e-6 / 1e9, 1e-9);  // ~87 GB/s, far under the link
  EXPECT_NEAR(flux::ops::bytes_in_flight_needed(450, 3), 1.35e6, 1e-6);  // what 450 GB/s at 3 us needs
  // Comm-bound: all the shards, then the last shard's GEMM step.
  EXPECT_NEAR(t.fused_us, 10 + t.comm_fused_us + 1060.0 / 8, 1e-9);
  EXPECT_GT(t.fused_us, t.sequential_us);   // starved of bytes in flight, the fused path loses ...
  EXPECT_EQ(t.best, "decomposed");           // ... even to the chunked NCCL path
  EXPECT_DOUBLE_EQ(t.hidden_fraction, 0.0);  // clamped at 0
  // With the link as the limit instead.
  r.pull_bytes_in_flight = 64e6;
  r.pull_kernel_gbps = 1000;
  EXPECT_EQ(flux::ops::predict_paths(FusedOp::kAgGemm, 8192, 6144, 12288, 8, r, link).limit, "link");
}

TEST(OverlapModel, OneRankIsTheGemmAlone) {
  const PathTimes t = flux::ops::predict_paths(FusedOp::kGemmRs, 1024, 12288, 24576, 1, rates());
  EXPECT_DOUBLE_EQ(t.sequential_us, 1000);
  EXPECT_DOUBLE_EQ(t.fused_us, 1000);
  EXPECT_EQ(t.best, "fused");
}

TEST(OverlapModel, CollectiveDefaultsToEightyPercentOfTheLink) {
  ComponentRates r = rates();
  r.collective_gbps = 0;
  const PathTimes t = flux::ops::predict_paths(FusedOp::kGemmRs, 4096, 12288, 6144, 4, r, LinkSpec{400, 0});
  EXPECT_NEAR(t.comm_sequential_us, flux::ops::fused_op_comm_bytes(FusedOp::kGemmRs, 4096, 12288, 6144, 4) / 320e9 * 1e6,
              1e-9);
}

TEST(OverlapModel, BadInputsSayWhatIsExpected) {
  ComponentRates r = rates();
  r.pull_kernel_gbps = 0;
  try {
    flux::ops::predict_paths(FusedOp::kGemmRs, 4096, 12288, 6144, 4, r);
    FAIL() << "accepted a zero pull rate";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("must be measured"), std::string::npos) << e.what();
  }
  EXPECT_THROW(flux::ops::predict_paths(FusedOp::kGemmRs, 4096, 0, 6144, 4, rates()), flux::InvalidArgument);
  EXPECT_THROW(flux::ops::predict_paths(FusedOp::kGemmRs, 4096, 1, 6144, 4, rates(), LinkSpec{0, 3}),
               flux::InvalidArgument);
  EXPECT_THROW(flux::ops::predict_paths(FusedOp::kGemmRs, 4096, 1, 6144, 4, rates(), LinkSpec{}, 0),
               flux::InvalidArgument);
}

}  // namespace
