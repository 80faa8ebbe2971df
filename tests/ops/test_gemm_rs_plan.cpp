// tests/ops/test_gemm_rs_plan.cpp — GEMM+RS planning without a GPU: the rule, the rank-rotated order,
// column bands, tile destinations, and that every tile a rank reduces is produced by each source no
// later than the ring step at which the rank takes it (no wait can deadlock).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "flux/gemm_ar.h"
#include "flux/gemm_rs.h"
#include "src/ops/gemm_rs/gemm_rs_plan.h"
#include "tests/support/cpu_support.h"

namespace {

using flux::testing::h200_limits;

TEST(GemmRsPlan, RuleAndReasons) {
  std::string why;
  EXPECT_EQ(flux::choose_gemm_rs_impl(8192, 12288, 6144, 1, &why), flux::GemmRsImpl::kFused);
  EXPECT_NE(why.find("one rank"), std::string::npos) << why;
  EXPECT_EQ(flux::choose_gemm_rs_impl(64, 512, 256, 4, &why), flux::GemmRsImpl::kSequential);
  EXPECT_NE(why.find("sequential"), std::string::npos) << why;  // the model's ranking: tests/ops/test_fused_rule.cpp
  EXPECT_EQ(flux::parse_gemm_rs_impl("decomposed"), flux::GemmRsImpl::kDecomposed);
  EXPECT_THROW(flux::parse_gemm_rs_impl("fast"), flux::InvalidArgument);
}

// The plans rank the paths with the device's own GEMM rates: an H100's bandwidth reaches the rule.
TEST(GemmRsPlan, TheRuleSeesTheDevicesBandwidth) {
  const auto h100 = flux::testing::h100_limits();
  flux::GemmRsDesc desc{16384, 12288, 6144, flux::DType::kBF16, flux::WeightLayout::kNK};
  const auto sel = flux::select_gemm_config(8192, desc.n, desc.k_per_rank, h100);
  std::string why;
  flux::choose_gemm_rs_impl(8192, desc.n, desc.k_per_rank, 4, &why, 132, desc.dtype, 8, h100.hbm_bytes_per_s);
  EXPECT_EQ(flux::ops::plan_gemm_rs(8192, desc, 4, 0, sel, h100, 8, 0, flux::GemmRsImpl::kAuto).reason, why);
  flux::choose_gemm_ar_path(8192, desc.n, desc.k_per_rank, 4, &why, 132, desc.dtype, 8, h100.hbm_bytes_per_s);
  EXPECT_EQ(flux::ops::plan_gemm_ar(8192, desc, 4, 0, sel, h100, 8, 0, flux::GemmArPath::kAuto).reason,
            "all-reduce, " + why);
}

TEST(GemmRsPlan, RankRotatedOrderAndBands) {
  const auto limits = h200_limits();
  flux::GemmRsDesc desc{16384, 12288, 6144, flux::DType::kBF16, flux::WeightLayout::kNK};
  for (int w : {2, 3, 4, 8}) {
    for (int r = 0; r < w; ++r) {
      const int64_t m = 1024 * w;
      auto sel = flux::select_gemm_config(m, desc.n, desc.k_per_rank, limits);
      auto L = flux::ops::plan_gemm_rs(m, desc, w, r, sel, limits, 8, 0, flux::GemmRsImpl::kFused);
      EXPECT_EQ(L.impl, flux::GemmRsImpl::kFused);
      EXPECT_EQ(L.order.segments, w);
      EXPECT_EQ(L.order.first_segment, (r + 1) % w);
      EXPECT_EQ(L.order.segment_rows, 1024);
      EXPECT_GE(L.col_bands, 1);
      EXPECT_EQ(L.reduce_sms, 8);
    }
  }
  // Bands keep a band of B (n / bands x K x 2) and of the accumulator in half the L2.
  EXPECT_EQ(flux::ops::auto_col_bands(12288, 6144, 128, 50 << 20, 48), 7);
  EXPECT_EQ(flux::ops::auto_col_bands(1024, 256, 128, 50 << 20, 4), 1);
  EXPECT_EQ(flux::ops::auto_col_bands(12288, 49152, 128, 50 << 20, 4), 4);  // never more bands than unit columns
  // e4m3: B is half the bytes, 4 bands instead of 7 (12288 x 6144 x 1 + 128 x 12288 x 4 bytes = 82 MB, 26 MB each).
  EXPECT_EQ(flux::ops::auto_col_bands(12288, 6144, 128, 50 << 20, 48, 1), 4);
}

TEST(GemmRsPlan, MustBeAMultipleOfTheWorld) {
  const auto limits = h200_limits();
  flux::GemmRsDesc desc{4096, 1024, 512, flux::DType::kFP16, flux::WeightLayout::kKN};
  auto sel = flux::select_gemm_config(1001, desc.n, desc.k_per_rank, limits);
  try {
    flux::ops::plan_gemm_rs(1001, desc, 4, 0, sel, limits, 8, 0, flux::GemmRsImpl::kAuto);
    FAIL() << "M = 1001 accepted with W = 4";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple of the world size 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(flux::ops::plan_gemm_rs(8192, desc, 4, 0, sel, limits, 8, 0, flux::GemmRsImpl::kAuto),
               flux::InvalidArgument);  // above max_m
}

// Every tile that reduction r takes at ring step t from source s = r-1-t has been produced by s at a
// ring position (band, segment step) no later than (band, t): the order of the GEMM core's scheduler
// (TileOrderMap) against the reduction's walk, for random shapes, tiles, clusters and W. One known
// exception, where M / W is not a multiple of the unit rows: a unit (cluster of tiles) that starts in a
// segment q <= s and reaches rows of a segment r > s belongs to q (it holds its first row), and source
// s's ring (s+1, ..., W-1, 0, ..., s) visits r before q: rank r's reduction then waits for that unit
// until s reaches q (correct, less overlap).
TEST(GemmRsPlan, ReductionNeverWaitsAheadOfProduction) {
  std::mt19937 rng(7);
  const int tiles[][4] = {{128, 128, 1, 2}, {128, 256, 2, 1}, {256, 128, 1, 2}, {64, 256, 2, 1}};
  for (int trial = 0; trial < 300; ++trial) {
    int64_t straddles = 0;
    const int w = std::uniform_int_distribution<int>(2, 8)(rng);
    const int64_t m = int64_t(w) * std::uniform_int_distribution<int64_t>(1, 700)(rng);
    const int64_t n = 8 * std::uniform_int_distribution<int64_t>(1, 400)(rng);
    const auto& t = tiles[rng() % 4];
    const int bands = std::uniform_int_distribution<int>(1, 6)(rng);
    const int64_t tiles_m = (m + t[0] - 1) / t[0], tiles_n = (n + t[1] - 1) / t[1];
    for (int s = 0; s < w; ++s) {
      flux::TileOrderSpec spec;
      spec.segments = w;
      spec.first_segment = (s + 1) % w;
      spec.segment_rows = m / w;
      spec.raster = flux::Raster::kRowMajor;
      spec.swizzle = 8;
      spec.col_bands = bands;
      flux::TileOrderMap map = flux::tile_order_map_unchecked(m, n, t[0], t[1], t[2], t[3], spec);
      // (band, ring step) at which source s produces each tile.
      std::vector<int> produced_band(size_t(tiles_m * tiles_n), -1), produced_step(size_t(tiles_m * tiles_n), -1),
          produced_seg(size_t(tiles_m * tiles_n), -1);
      for (int64_t u = 0; u < map.total_units(); ++u) {
        flux::UnitCoord c = map.unit_at(u);
        int band = 0;
        while (c.n >= map.col_band_begin(band + 1)) ++band;
        int seg = 0;
        while (c.m >= map.segment_begin(seg + 1)) ++seg;
        int step = (seg - spec.first_segment + w) % w;
        for (int dm = 0; dm < t[2]; ++dm) {
          for (int dn = 0; dn < t[3]; ++dn) {
            int64_t i = int64_t(c.m) * t[2] + dm, j = int64_t(c.n) * t[3] + dn;
            if (i < tiles_m && j < tiles_n) {
              produced_band[size_t(i * tiles_n + j)] = band;
              produced_step[size_t(i * tiles_n + j)] = step;
              produced_seg[size_t(i * tiles_n + j)] = seg;
            }
          }
        }
      }
      // Reduction r takes source s at step t = (r - 1 - s) mod w, in band order.
      for (int r = 0; r < w; ++r) {
        const int step = (r - 1 - s + 2 * w) % w;
        const int64_t seg0 = int64_t(r) * (m / w), seg1 = seg0 + m / w;
        for (int64_t i = seg0 / t[0]; i <= (seg1 - 1) / t[0]; ++i) {
          for (int b = 0; b < bands; ++b) {
            int64_t j0 = int64_t(map.col_band_begin(b)) * t[3], j1 = std::min<int64_t>(int64_t(map.col_band_begin(b + 1)) * t[3], tiles_n);
            for (int64_t j = j0; j < j1; ++j) {
              int pb = produced_band[size_t(i * tiles_n + j)], ps = produced_step[size_t(i * tiles_n + j)];
              ASSERT_GE(pb, 0) << "tile never produced";
              const bool wrap_straddle = produced_seg[size_t(i * tiles_n + j)] <= s && r > s;
              if (wrap_straddle) {
                ++straddles;
                continue;
              }
              ASSERT_TRUE(pb < b || (pb == b && ps <= step))
                  << "W=" << w << " m=" << m << " n=" << n << " tile " << i << "," << j << " source " << s
                  << " produced at band " << pb << " step " << ps << ", taken by rank " << r << " at band " << b
                  << " step " << step;
            }
          }
        }
      }
    }
    if ((m / w) % (int64_t(t[0]) * t[2]) == 0) {
      EXPECT_EQ(straddles, 0) << "segments aligned to unit rows must pipeline fully (W=" << w << " m=" << m << ")";
    }
  }
}

}  // namespace

// GEMM+AR plans on the same machinery: every rank the same order and every row (segment_rows = M), the
// GEMM+RS rule for the path, M not a multiple of W, and the path names.
TEST(GemmArPlan, EveryRankTheSameOrderOverEveryRow) {
  const auto limits = h200_limits();
  flux::GemmRsDesc desc{4096, 8192, 1024, flux::DType::kBF16, flux::WeightLayout::kNK};
  for (int w : {2, 3, 8}) {
    for (int64_t m : {int64_t(1), int64_t(7), int64_t(127), int64_t(3000)}) {
      auto sel = flux::select_gemm_config(m, desc.n, desc.k_per_rank, limits);
      auto L = flux::ops::plan_gemm_ar(m, desc, w, w - 1, sel, limits, 8, 0, flux::GemmArPath::kOneShot);
      EXPECT_EQ(L.impl, flux::GemmRsImpl::kFused);
      EXPECT_EQ(L.shots, 1);
      EXPECT_EQ(L.segment_rows, m);
      EXPECT_EQ(L.order.segments, 1);
      EXPECT_EQ(L.order.first_segment, 0);
      EXPECT_EQ(L.order.segment_rows, m);
      EXPECT_EQ(L.reduce_sms, 8);
      EXPECT_GE(L.col_bands, 1);
      EXPECT_NE(L.reason.find("forced"), std::string::npos) << L.reason;
    }
  }
  auto sel = flux::select_gemm_config(8, desc.n, desc.k_per_rank, limits);
  auto L = flux::ops::plan_gemm_ar(8, desc, 4, 0, sel, limits, 8, 0, flux::GemmArPath::kAuto);
  EXPECT_EQ(L.impl, flux::GemmRsImpl::kSequential);  // 0.1 GFLOP: too short for the fused paths' fixed costs
  EXPECT_NE(L.reason.find("all-reduce"), std::string::npos) << L.reason;
  EXPECT_THROW(flux::ops::plan_gemm_ar(4097, desc, 4, 0, sel, limits, 8, 0, flux::GemmArPath::kAuto),
               flux::InvalidArgument);  // beyond max_m
  EXPECT_EQ(flux::parse_gemm_ar_path("one_shot"), flux::GemmArPath::kOneShot);
  EXPECT_STREQ(flux::to_string(flux::GemmArPath::kDecomposed), "decomposed");
  EXPECT_EQ(flux::parse_gemm_ar_path("two_shot"), flux::GemmArPath::kTwoShot);
  EXPECT_EQ(flux::parse_gemm_ar_path("rs_ag"), flux::GemmArPath::kRsAg);
  try {
    flux::parse_gemm_ar_path("three_shot");
    FAIL() << "accepted a path that does not exist";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("flux gemm_ar: unknown path 'three_shot' (expected auto, one_shot, two_shot, "
                                         "rs_ag, sequential or decomposed)"),
              std::string::npos)
        << e.what();
  }
}

// Two-shot: GEMM+RS's rank-rotated ring over segments of ceil(M / W) rows (any M: the last segments are
// shorter or empty), every row in exactly one rank's segment.
TEST(GemmArPlan, TwoShotRingOverCeilSegments) {
  const auto limits = h200_limits();
  flux::GemmRsDesc desc{4096, 8192, 1024, flux::DType::kBF16, flux::WeightLayout::kNK};
  for (int w : {2, 3, 8}) {
    for (int64_t m : {int64_t(1), int64_t(7), int64_t(127), int64_t(3000)}) {
      auto sel = flux::select_gemm_config(m, desc.n, desc.k_per_rank, limits);
      int64_t covered = 0;
      for (int r = 0; r < w; ++r) {
        auto L = flux::ops::plan_gemm_ar(m, desc, w, r, sel, limits, 8, 0, flux::GemmArPath::kTwoShot);
        EXPECT_EQ(L.impl, flux::GemmRsImpl::kFused);
        EXPECT_EQ(L.shots, 2);
        EXPECT_FALSE(L.gather_after);
        // rs_ag: the same first shot, the all-gather after the join.
        auto C = flux::ops::plan_gemm_ar(m, desc, w, r, sel, limits, 8, 0, flux::GemmArPath::kRsAg);
        EXPECT_EQ(C.impl, flux::GemmRsImpl::kFused);
        EXPECT_EQ(C.shots, 2);
        EXPECT_TRUE(C.gather_after);
        EXPECT_EQ(C.segment_rows, L.segment_rows);
        EXPECT_EQ(C.order.first_segment, L.order.first_segment);
        EXPECT_EQ(L.segment_rows, (m + w - 1) / w);
        EXPECT_EQ(L.order.segments, w);
        EXPECT_EQ(L.order.first_segment, (r + 1) % w);
        EXPECT_EQ(L.order.segment_rows, L.segment_rows);
        const flux::RowSegments seg{m, L.segment_rows};
        covered += seg.end(r) - seg.begin(r);
      }
      EXPECT_EQ(covered, m) << "W=" << w << " M=" << m;
    }
  }
}
