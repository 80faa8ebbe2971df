// tests/gemm/test_gemm_config.cpp — the config table and the heuristic (CPU only).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "flux/gemm.h"

namespace {

flux::DeviceLimits h200_like() {
  flux::DeviceLimits d;
  d.cc_major = 9;
  d.sm_count = 132;
  d.smem_per_block_optin = 227 * 1024;
  d.l2_bytes = 50 * 1024 * 1024;
  d.name = "test device";
  return d;
}

TEST(GemmConfig, TableIsConsistent) {
  const auto& configs = flux::gemm_configs();
  ASSERT_EQ(configs.size(), 4u);
  std::set<std::string> names;
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& c = configs[i];
    EXPECT_EQ(c.id, static_cast<int>(i));
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate config name " << c.name;
    EXPECT_EQ(c.tile_k, 64);
    EXPECT_GE(c.tile_m, 64);
    EXPECT_GE(c.tile_n, 128);
    EXPECT_EQ(c.cluster_m * c.cluster_n, 2);
    // Cooperative kernels split M between two math warp groups: tile_m >= 128.
    if (!c.pingpong) {
      EXPECT_GE(c.tile_m, 128) << c.name;
    }
    std::string expect = std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) + "x" + std::to_string(c.tile_k);
    EXPECT_EQ(std::string(c.name).rfind(expect, 0), 0u) << "name must spell the tile: " << c.name;
  }
}

TEST(GemmConfig, HeuristicIsValidAndExplains) {
  const auto limits = h200_like();
  for (int64_t m : {1, 7, 64, 127, 1000, 1024, 3000, 4096, 8192, 16384}) {
    for (int64_t n : {8, 1536, 6144, 12288, 24576}) {
      for (int64_t k : {8, 6144, 12288}) {
        flux::GemmSelection s = flux::select_gemm_config(m, n, k, limits);
        EXPECT_GE(s.config.id, 0);
        EXPECT_LT(s.config.id, 4);
        EXPECT_EQ(s.tiles_m, (m + s.config.tile_m - 1) / s.config.tile_m);
        EXPECT_EQ(s.tiles_n, (n + s.config.tile_n - 1) / s.config.tile_n);
        EXPECT_TRUE(s.raster == flux::Raster::kRowMajor || s.raster == flux::Raster::kColMajor);
        EXPECT_TRUE(s.swizzle == 1 || s.swizzle == 2 || s.swizzle == 4 || s.swizzle == 8) << s.swizzle;
        EXPECT_NE(s.reason.find(s.config.name), std::string::npos) << s.reason;
        // Deterministic.
        EXPECT_EQ(flux::select_gemm_config(m, n, k, limits).config.id, s.config.id);
      }
    }
  }
}

TEST(GemmConfig, HeuristicUsesOccupancy) {
  // With room for only one cluster at a time every config takes one wave per unit: the largest
  // per-cluster work at the best rate wins (a 128x256 or 256x128 tile), never the 64-row config.
  auto limits = h200_like();
  flux::GemmSelection s = flux::select_gemm_config(8192, 8192, 4096, limits, {1, 1, 1, 1});
  EXPECT_TRUE(s.config.tile_m * s.config.tile_n == 128 * 256) << s.config.name;
  EXPECT_NE(s.reason.find("waves of 1 clusters"), std::string::npos) << s.reason;
}

TEST(GemmConfig, HeuristicRasterFollowsLongerDimension) {
  const auto limits = h200_like();
  // Many more unit columns than rows: walk M fastest.
  EXPECT_EQ(flux::select_gemm_config(1024, 24576, 12288, limits).raster, flux::Raster::kColMajor);
  // Many more unit rows than columns: walk N fastest.
  EXPECT_EQ(flux::select_gemm_config(65536, 1024, 12288, limits).raster, flux::Raster::kRowMajor);
}

TEST(GemmConfig, HeuristicRejectsBadInput) {
  auto limits = h200_like();
  EXPECT_THROW(flux::select_gemm_config(0, 128, 128, limits), flux::InvalidArgument);
  limits.sm_count = 0;
  EXPECT_THROW(flux::select_gemm_config(128, 128, 128, limits), flux::InvalidArgument);
}

}  // namespace
