// tests/gemm/test_gemm_config.cpp — the config table and the heuristic (CPU only).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <set>
#include <tuple>
#include <utility>
#include <vector>
#include <string>

#include "flux/gemm.h"
#include "tests/support/cpu_support.h"

namespace {

using flux::testing::h200_limits;
using flux::testing::h100_limits;

// The lines a selection's walk cuts its bands from: unit columns when it walks M fastest (at least as many unit
// columns as rows), else unit rows (a unit is one cluster's tiles); `col` says which the walk should be.
struct Walk {
  bool col;
  int64_t lines;
};
Walk expected_walk(const flux::GemmSelection& s, int64_t m, int64_t n) {
  const int64_t units_m = ((m + s.config.tile_m - 1) / s.config.tile_m + s.config.cluster_m - 1) / s.config.cluster_m;
  const int64_t units_n = ((n + s.config.tile_n - 1) / s.config.tile_n + s.config.cluster_n - 1) / s.config.cluster_n;
  const bool col = units_n >= units_m;
  return {col, col ? units_n : units_m};
}

TEST(GemmConfig, TableIsConsistent) {
  const auto& configs = flux::gemm_configs();
  ASSERT_EQ(configs.size(), 21u);
  std::set<std::string> names;
  int skinny = 0, fp8 = 0, gemv = 0, decode_swap = 0, fp8_skinny = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& c = configs[i];
    EXPECT_EQ(c.id, static_cast<int>(i));
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate config name " << c.name;
    std::string expect = std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) + "x" + std::to_string(c.tile_k);
    EXPECT_EQ(std::string(c.name).rfind(expect, 0), 0u) << "name must spell the tile: " << c.name;
    EXPECT_EQ(c.gemv, std::string(c.name).find("_gemv") != std::string::npos) << c.name;
    if (c.skinny) {
      // Decode kernels: one CTA per tile (no cluster), K in chunks of 64 bytes per lane quad (32 16-bit elements,
      // 64 e4m3), tile rows a multiple of the instruction's 8; they split K; they run the hooks (no swap of the
      // tiles). The mma ones: 4 warps of 16 columns; the GEMV: 8 warps of 2 rows of B (gemv_kernel.cuh).
      ++skinny;
      EXPECT_EQ(c.cluster_m * c.cluster_n, 1) << c.name;
      EXPECT_EQ(c.tile_n, c.gemv ? 16 : 64) << c.name;
      if (c.gemv) ++gemv;
      if (c.fp8) {
        ++fp8_skinny;
        EXPECT_FALSE(c.gemv) << c.name;
        EXPECT_NE(std::string(c.name).find("_e4m3"), std::string::npos) << c.name;
      }
      EXPECT_EQ(c.tile_k % (c.fp8 ? 64 : 32), 0) << c.name;
      EXPECT_EQ(c.tile_m % 8, 0) << c.name;
      EXPECT_TRUE(c.split_k) << c.name;
      EXPECT_FALSE(c.swap_ab || c.pingpong) << c.name;
      continue;
    }
    if (c.fp8) {
      // FP8: 128 bytes of K per row and stage (tile_k 128 elements), two-CTA clusters, whole K, unswapped.
      ++fp8;
      EXPECT_EQ(c.tile_k, 128) << c.name;
      EXPECT_EQ(c.cluster_m * c.cluster_n, 2) << c.name;
      EXPECT_FALSE(c.split_k || c.swap_ab || c.skinny) << c.name;
      EXPECT_NE(std::string(c.name).find("_e4m3"), std::string::npos) << c.name;
      if (!c.pingpong) {
        EXPECT_GE(c.tile_m, 128) << c.name;
      }
      continue;
    }
    EXPECT_FALSE(c.gemv) << c.name;
    if (c.swap_ab && c.tile_k == 128) {
      // The decode rule's swap-AB configs: 64 columns of N (WGMMA's M), 16 or 64 rows of A (its N), 128-deep
      // k-blocks, one CTA per cluster, ping-pong, split-K.
      ++decode_swap;
      EXPECT_EQ(c.tile_n, 64) << c.name;
      EXPECT_TRUE(c.tile_m == 16 || c.tile_m == 64) << c.name;
      EXPECT_EQ(c.cluster_m * c.cluster_n, 1) << c.name;
      EXPECT_TRUE(c.pingpong && c.split_k) << c.name;
      continue;
    }
    EXPECT_EQ(c.tile_k, 64);
    EXPECT_GE(c.tile_m, 64);
    EXPECT_GE(c.tile_n, 112) << c.name;      // 112 / 144: the mid-M widths (gemm_config.h)
    EXPECT_EQ(c.tile_n % 16, 0) << c.name;   // WGMMA N and the epilogue subtiles' columns
    EXPECT_EQ(c.cluster_m * c.cluster_n, 2);
    // Cooperative kernels split M between two math warp groups: tile_m >= 128.
    if (!c.pingpong) {
      EXPECT_GE(c.tile_m, 128) << c.name;
    }
    // Split-K runs on the ping-pong configs (the small-M ones); the cooperative ones are whole-K only.
    EXPECT_EQ(c.split_k, c.pingpong) << c.name;
  }
  EXPECT_EQ(skinny, 4);
  EXPECT_EQ(fp8_skinny, 1);
  EXPECT_EQ(gemv, 1);
  EXPECT_EQ(decode_swap, 2);
  EXPECT_EQ(fp8, 5);  // the warp-specialized ones
}

// The candidates follow the input type: bf16 / fp16 selections never pick an e4m3 config and e4m3 ones
// always do, at every M (the heuristic's default is the 16-bit configs).
TEST(GemmConfig, CandidatesFollowTheInputType) {
  const auto limits = h200_limits();
  for (int64_t m : {1, 8, 64, 127, 333, 1024, 4096, 8192}) {
    for (int64_t n : {1024, 5120, 28672}) {
      const auto sixteen = flux::select_gemm_config(m, n, 4096, limits);
      EXPECT_FALSE(sixteen.config.fp8) << m << "x" << n << " " << sixteen.config.name;
      const auto eight = flux::select_gemm_config(m, n, 4096, limits, {}, 0, true, flux::DType::kE4M3);
      EXPECT_TRUE(eight.config.fp8) << m << "x" << n << " " << eight.config.name;
      // FP8 splits K only on its skinny config (a candidate at M <= 16).
      if (eight.config.skinny) {
        EXPECT_LE(m, eight.config.tile_m) << eight.reason;
      } else {
        EXPECT_EQ(eight.splits, 1) << eight.reason;
      }
      EXPECT_GT(eight.predicted_us, 0.0) << eight.reason;
    }
  }
  // A forced split (without a forced config) runs on the only FP8 config that splits, the skinny one, where it is a
  // candidate (M <= 16); above, there is none to run it on.
  const flux::GemmSelection split = flux::select_gemm_config(16, 4096, 4096, limits, {}, 4, true, flux::DType::kE4M3);
  EXPECT_STREQ(split.config.name, "16x64x256_skinny_e4m3") << split.reason;
  EXPECT_EQ(split.splits, 4) << split.reason;
  EXPECT_THROW(flux::select_gemm_config(64, 4096, 4096, limits, {}, 4, true, flux::DType::kE4M3), flux::InvalidArgument);
}

// The skinny configs are candidates only for M within one of their tiles, and never where the plan has no
// kernel for them (max_active_clusters < 0: a [K, N] weight).
TEST(GemmConfig, SkinnyOnlyForDecodeAndWhenCompiled) {
  const auto limits = h200_limits();
  const auto& configs = flux::gemm_configs();
  std::vector<int> none(configs.size(), 0);
  for (const auto& c : configs) {
    if (c.skinny) none[static_cast<size_t>(c.id)] = -1;
  }
  for (int64_t m : {1, 8, 16, 17, 64, 65, 128, 4096}) {
    for (int64_t n : {256, 2048, 8192, 28672}) {
      for (int64_t k : {256, 2048, 8192}) {
        const flux::GemmSelection s = flux::select_gemm_config(m, n, k, limits);
        if (s.config.skinny) {
          EXPECT_LE(m, s.config.tile_m) << s.reason;
          EXPECT_EQ(s.raster, flux::Raster::kRowMajor);
          EXPECT_EQ(s.swizzle, 1);
        }
        EXPECT_FALSE(flux::select_gemm_config(m, n, k, limits, none).config.skinny) << m << "x" << n << "x" << k;
      }
    }
  }
}

// The mid-M widths are picked where they fill the SMs in one wave and the others do not (gemm_config.h): at M = 512,
// N = 3584 is 4 x 32 tiles of 128 x 112 on 132 SMs (128 x 128: 112 tiles, 128 x 192: 76), N = 4608 is 4 x 32 of
// 128 x 144 (128 x 112: 168 = two waves), at any K and with or without swap-AB (gemm_config.cpp, the fitted rates).
// The FP8 configs built without a GPU to run them on (gemm_config.cpp held_back: 128x112x128 / 128x144x128
// cooperative) are never the heuristic's pick, also where their widths fill the SMs best.
TEST(GemmConfig, HeldBackConfigsAreNotPicked) {
  const auto limits = h200_limits();
  for (int64_t m : {128, 512, 1024, 4096, 8192}) {
    for (int64_t n : {3584, 4608, 6144, 12288, 24576}) {
      for (int64_t k : {4096, 12288}) {
        const flux::GemmSelection s = flux::select_gemm_config(m, n, k, limits, {}, 0, true, flux::DType::kE4M3);
        EXPECT_TRUE(s.config.fp8) << s.reason;
        EXPECT_STRNE(s.config.name, "128x112x128_coop_c2x1_e4m3") << s.reason;
      }
    }
  }
}

// The large-M rate table follows the device's HBM bandwidth (gemm_config.cpp kRelativeRateLowHbm): on the H100
// the suite's M = 4096 / 8192 shapes leave 128x128 ping-pong (0.53-0.75 of cuBLAS there) for a 256-wide
// cooperative tile; the H200 and a device that reports no bandwidth keep the default table; M <= 2048 shares one.
TEST(GemmConfig, LargeMRatesFollowTheHbmBandwidth) {
  const auto h200 = h200_limits();
  const auto h100 = h100_limits();
  auto unknown = h200_limits();
  unknown.hbm_bytes_per_s = 0;
  for (int64_t m : {4096, 8192}) {
    for (int64_t n : {6144, 12288, 24576}) {
      const flux::GemmSelection s200 = flux::select_gemm_config(m, n, 12288, h200, {}, 0, true);
      const flux::GemmSelection s100 = flux::select_gemm_config(m, n, 12288, h100, {}, 0, true);
      const flux::GemmSelection s0 = flux::select_gemm_config(m, n, 12288, unknown, {}, 0, true);
      EXPECT_STREQ(s200.config.name, "128x128x64_pingpong_c1x2") << m << "x" << n << ": " << s200.reason;
      EXPECT_STREQ(s0.config.name, s200.config.name) << m << "x" << n;
      EXPECT_FALSE(s100.config.pingpong) << m << "x" << n << ": " << s100.reason;
      EXPECT_NE(s100.reason.find("large-M rates for HBM below 4 TB/s"), std::string::npos) << s100.reason;
      EXPECT_EQ(s200.reason.find("HBM below"), std::string::npos) << s200.reason;
    }
  }
  for (int64_t m : {1, 64, 512, 2048}) {
    for (int64_t n : {3584, 12288}) {
      EXPECT_STREQ(flux::select_gemm_config(m, n, 4096, h100, {}, 0, true).config.name,
                   flux::select_gemm_config(m, n, 4096, h200, {}, 0, true).config.name) << m << "x" << n;
    }
  }
}

// FP8 128x144x128 (kRelativeRate 2.10 above M = 2048, fitted on the s24a suite sweep) takes the large-M suite
// shapes it quantizes better than 128x128x128, and not M <= 2048 (where it lost on every suite shape).
TEST(GemmConfig, Fp8WideTileIsPickedAtLargeMOnly) {
  const auto limits = h200_limits();
  for (int64_t m : {4096, 8192}) {
    for (int64_t n : {12288, 24576}) {
      const flux::GemmSelection s = flux::select_gemm_config(m, n, 12288, limits, {}, 0, true, flux::DType::kE4M3);
      EXPECT_STREQ(s.config.name, "128x144x128_coop_c2x1_e4m3") << m << "x" << n << ": " << s.reason;
    }
  }
  for (int64_t n : {6144, 12288, 24576}) {
    const flux::GemmSelection s = flux::select_gemm_config(1024, n, 12288, limits, {}, 0, true, flux::DType::kE4M3);
    EXPECT_STRNE(s.config.name, "128x144x128_coop_c2x1_e4m3") << "1024x" << n << ": " << s.reason;
  }
}

// FP8 decode (gemm_config.cpp kSkinnyFp8LatencyUs, fitted on the tuning half's FP8 decode sweep and judged on the test
// half's): the skinny FP8 config takes M <= 16 where N leaves the GPU few tiles and it splits K (the test half's
// 1 x 744 x 63200 ran 4.4x faster on it than on the ping-pong config, s26b), and leaves the shapes where N fills the
// GPU to the 64x128 ping-pong config (where it had run down to 0.71x, 16 x 9216 x 7168); above M = 16 it is no
// candidate. FP8 split-K slices are whole 16-byte vectors: 16 e4m3 elements (8 of bf16).
TEST(GemmConfig, Fp8SkinnyConfigTakesDecodeWhereNIsSmall) {
  const auto limits = h200_limits();
  const std::vector<int> clusters = flux::testing::h200_measured_clusters();  // as a plan measures them
  const auto fp8 = [&](int64_t m, int64_t n, int64_t k) {
    return flux::select_gemm_config(m, n, k, limits, clusters, 0, true, flux::DType::kE4M3);
  };
  for (auto [m, n, k] : {std::array<int64_t, 3>{1, 744, 63200}, {4, 1024, 7168}, {8, 1024, 7168}, {8, 4096, 4096}}) {
    const flux::GemmSelection s = fp8(m, n, k);
    EXPECT_STREQ(s.config.name, "16x64x256_skinny_e4m3") << m << "x" << n << "x" << k << ": " << s.reason;
    EXPECT_GT(s.splits, 1) << s.reason;
    EXPECT_TRUE(flux::split_k_divides(k, s.splits, flux::DType::kE4M3)) << s.reason;
  }
  for (auto [m, n, k] : {std::array<int64_t, 3>{16, 9216, 7168}, {16, 18432, 7168}, {1, 18432, 7168}}) {
    const flux::GemmSelection s = fp8(m, n, k);
    EXPECT_STREQ(s.config.name, "64x128x128_pingpong_c1x2_e4m3") << m << "x" << n << "x" << k << ": " << s.reason;
  }
  for (int64_t n : {744, 1024, 4096}) {
    EXPECT_FALSE(fp8(17, n, 7168).config.skinny) << n;
    EXPECT_FALSE(fp8(32, n, 7168).config.skinny) << n;
  }
  for (int64_t m : {1, 8, 16}) {
    EXPECT_FALSE(flux::select_gemm_config(m, 4096, 7168, limits, {}, 0, true).config.fp8);  // bf16: never
  }
  EXPECT_TRUE(flux::split_k_divides(1920, 16));  // 120 of bf16: 240 bytes
  EXPECT_FALSE(flux::split_k_divides(1920, 16, flux::DType::kE4M3));  // 120 of e4m3: 120 bytes
  EXPECT_TRUE(flux::split_k_divides(1536, 16, flux::DType::kE4M3));
}

TEST(GemmConfig, MidWidthConfigsArePickedWhereTheyFillOneWave) {
  const auto limits = h200_limits();
  for (int64_t k : {1024, 4096, 14336}) {
    for (bool swap : {true, false}) {
      EXPECT_STREQ(flux::select_gemm_config(512, 3584, k, limits, {}, 0, swap).config.name, "128x112x64_coop_c2x1")
          << "K " << k;
      EXPECT_STREQ(flux::select_gemm_config(512, 4608, k, limits, {}, 0, swap).config.name, "128x144x64_coop_c2x1")
          << "K " << k;
    }
  }
}

TEST(GemmConfig, HeuristicIsValidAndExplains) {
  const auto limits = h200_limits();
  for (int64_t m : {1, 7, 64, 127, 1000, 1024, 3000, 4096, 8192, 16384}) {
    for (int64_t n : {8, 1536, 6144, 12288, 24576}) {
      for (int64_t k : {8, 6144, 12288}) {
        flux::GemmSelection s = flux::select_gemm_config(m, n, k, limits);
        EXPECT_GE(s.config.id, 0);
        EXPECT_LT(s.config.id, static_cast<int>(flux::gemm_configs().size()));
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
  // The same shape with room for a single cluster of the config it picks when every config fits 66: every unit
  // of that config becomes a wave of its own, so another config must win, planned on 66 clusters.
  auto limits = h200_limits();
  std::vector<int> clusters = {66, 66, 66, 66, 66, 0, 0, 0, 0, 0, 66, 66};  // 0: the skinny and FP8 configs' default
  const flux::GemmSelection free = flux::select_gemm_config(8192, 8192, 4096, limits, clusters);
  clusters[free.config.id] = 1;
  flux::GemmSelection starved = flux::select_gemm_config(8192, 8192, 4096, limits, clusters);
  EXPECT_NE(starved.config.id, free.config.id) << free.reason << " / " << starved.reason;
  EXPECT_NE(starved.reason.find("waves of 66 clusters"), std::string::npos) << starved.reason;
}

TEST(GemmConfig, HeuristicOnTheSuiteShapes) {
  // At M > 2048 the large-M rate table (refitted on the corpus's tuning half, 2026-12-04) picks whole tiles of
  // 256x128 cooperative or 128x128 ping-pong on the per-rank shapes of DESIGN.md, never split or stream-K; a
  // pick walks the shorter dimension of units fastest (ping-pong in bands of 8 since 2026-12-07, cooperative in bands
  // of about sqrt(clusters)).
  // (M = 1024 is in the regime of kRelativeRateMid, fitted on the tuning half too.)
  const auto limits = h200_limits();
  for (int64_t m : {4096, 8192}) {
    for (int tp : {2, 4, 8}) {
      for (auto nk : {std::pair<int64_t, int64_t>{49152 / tp, 12288}, {12288, 49152 / tp}}) {
        flux::GemmSelection s = flux::select_gemm_config(m, nk.first, nk.second, limits);
        const std::string name = s.config.name;
        EXPECT_TRUE(name == "128x128x64_pingpong_c1x2" || name == "256x128x64_coop_c1x2")
            << m << "x" << nk.first << "x" << nk.second << ": " << s.reason;
        EXPECT_EQ(s.splits, 1);
        EXPECT_FALSE(s.stream_k);
        if (s.config.pingpong) {  // the shorter dimension of units fastest, in bands of 8
          EXPECT_EQ(s.raster, expected_walk(s, m, nk.first).col ? flux::Raster::kColMajor : flux::Raster::kRowMajor)
              << s.reason;
          EXPECT_EQ(s.swizzle, 8);
        }
      }
    }
  }
}

TEST(GemmConfig, HeuristicCooperativeRasterFollowsLongerDimension) {
  const auto limits = h200_limits();
  const std::vector<int> no_pingpong = {66, 1, 66, 1, 1};
  // Many more unit columns than rows: walk M fastest.
  EXPECT_EQ(flux::select_gemm_config(1024, 24576, 12288, limits, no_pingpong).raster, flux::Raster::kColMajor);
  // Many more unit rows than columns: walk N fastest.
  EXPECT_EQ(flux::select_gemm_config(65536, 1024, 12288, limits, no_pingpong).raster, flux::Raster::kRowMajor);
}

TEST(GemmConfig, DecodeTakesSwapAbOverTheSquarePingpongTile) {
  // M <= 64 (kSquarePingpongYieldMaxM): the 128x128 ping-pong config is no candidate while the swap-AB config is one
  // (it ran 1.1-1.3x faster on every tuning-half decode shape the model had given 128x128); without swap-AB (the
  // fused ops' plans) it still is. Shapes where the model took 128x128 ping-pong unsplit before the rule.
  const auto limits = h200_limits();
  const std::vector<std::pair<int64_t, int64_t>> nk = {{14336, 4096}, {10240, 8192}, {16384, 16384}, {9216, 16384}};
  auto square = [](const flux::GemmSelection& s) { return std::string(s.config.name) == "128x128x64_pingpong_c1x2"; };
  const std::vector<int> measured = flux::testing::h200_measured_clusters();
  int square_without_swap = 0;
  for (int64_t m : {1, 8, 64}) {
    for (const auto& [n, k] : nk) {
      const flux::GemmSelection with = flux::select_gemm_config(m, n, k, limits, measured, 0, true);
      EXPECT_FALSE(square(with)) << m << "x" << n << "x" << k << ": " << with.reason;
      const flux::GemmSelection without = flux::select_gemm_config(m, n, k, limits, measured, 0, false);
      EXPECT_FALSE(without.config.swap_ab) << without.reason;
      square_without_swap += square(without);
    }
  }
  EXPECT_GT(square_without_swap, 0) << "without swap-AB the 128x128 ping-pong config is still chosen at decode";
  // With no swap-AB kernel compiled (max_active_clusters -1 for it) the rule does not apply either.
  std::vector<int> no_swap_kernel = measured;
  for (const auto& c : flux::gemm_configs()) {
    if (c.swap_ab) no_swap_kernel[c.id] = -1;
  }
  int square_no_kernel = 0;  // (at M = 1 the GEMV config, a candidate there only, may win instead)
  for (int64_t m : {1, 8}) {
    for (const auto& [n, k] : nk) {
      const flux::GemmSelection s = flux::select_gemm_config(m, n, k, limits, no_swap_kernel, 0, true);
      square_no_kernel += square(s);
    }
  }
  EXPECT_GT(square_no_kernel, 0);
  // Above the streaming regime the rule is silent: 128x128 ping-pong remains a candidate (picked somewhere).
  int square_above = 0;
  for (int64_t m : {128, 256, 512}) {
    for (const auto& [n, k] : nk) {
      square_above += square(flux::select_gemm_config(m, n, k, limits, measured));
    }
  }
  EXPECT_GT(square_above, 0);
}

// The decode rule (gemm_config.cpp): M <= 16 takes 16x64x128 swap-AB, 33 <= M <= 64 takes 64x64x128 swap-AB, unsplit
// unless the units (64 columns of N each) fill less than a sixth of the SMs, then the most slices that keep them
// within 3/4 of the SMs; not for plans without swap-AB, FP8, or without the config's kernel; forced splits hold.
TEST(GemmConfig, DecodeRuleTakesTheDeepSwapAbTiles) {
  const auto limits = h200_limits();
  const std::vector<int> measured = flux::testing::h200_measured_clusters();
  auto name = [](const flux::GemmSelection& s) { return std::string(s.config.name); };
  for (int64_t m : {1, 2, 7, 8, 16, 33, 48, 64}) {
    const std::string want = m <= 16 ? "16x64x128_pingpong_swapab_c1x1" : "64x64x128_pingpong_swapab_c1x1";
    for (int64_t n : {2048, 4096, 14336, 28672}) {
      const flux::GemmSelection s = flux::select_gemm_config(m, n, 4096, limits, measured);
      EXPECT_EQ(name(s), want) << m << "x" << n << ": " << s.reason;
      EXPECT_EQ(s.splits, 1) << s.reason;  // >= 32 units: a quarter of the SMs or more
      EXPECT_NE(s.reason.find("decode rule"), std::string::npos) << s.reason;
      // The order is over C's units: bands of 8 unit columns (the kernel's row-major bands of its M).
      EXPECT_EQ(s.raster, flux::Raster::kColMajor) << s.reason;
      EXPECT_EQ(s.swizzle, 8) << s.reason;
    }
    // Their own time term (gemm_config.cpp, fitted: ~10% median error on the test half), not the generic one
    // (2.2-3.4x high on them): at N = K = 4096 one wave of 64-column units, 64 x 4096 x 2 bytes per CTA at 60 GB/s
    // after a 7 us fill: 15.7 us (64 units, one wave, for both configs' M).
    const flux::GemmSelection timed = flux::select_gemm_config(m, 4096, 4096, limits, measured);
    EXPECT_NEAR(timed.predicted_us, 7.0 + 64.0 * 4096 * 2 / 6.0e4, 0.01) << timed.reason;
    // 8 units of 64 columns: split into the most slices within 3/4 of the 132 SMs (8 of 8192's 2, 4, 8, 16).
    const flux::GemmSelection few = flux::select_gemm_config(m, 512, 8192, limits, measured);
    EXPECT_EQ(name(few), want) << few.reason;
    EXPECT_EQ(few.splits, 8) << few.reason;
    // Forced splits hold; no swap-AB, FP8 or no kernel: the time model's pick, never these two configs.
    EXPECT_EQ(flux::select_gemm_config(m, 512, 8192, limits, measured, 1).splits, 1);
    EXPECT_EQ(flux::select_gemm_config(m, 4096, 8192, limits, measured, 4).splits, 4);
    EXPECT_FALSE(flux::select_gemm_config(m, 4096, 4096, limits, measured, 0, false).config.swap_ab);
    EXPECT_TRUE(flux::select_gemm_config(m, 4096, 4096, limits, measured, 0, true, flux::DType::kE4M3).config.fp8);
    std::vector<int> no_kernel = measured;
    no_kernel[flux::select_gemm_config(m, 4096, 4096, limits, measured).config.id] = -1;
    EXPECT_NE(name(flux::select_gemm_config(m, 4096, 4096, limits, no_kernel)), want);
  }
  // Outside the rule's rows neither config is picked (the time model does not have them as candidates).
  for (int64_t m : {17, 24, 32, 65, 128, 512, 4096}) {
    for (int64_t n : {512, 4096, 28672}) {
      const std::string got = name(flux::select_gemm_config(m, n, 4096, limits, measured));
      EXPECT_NE(got, "16x64x128_pingpong_swapab_c1x1") << m << "x" << n;
      EXPECT_NE(got, "64x64x128_pingpong_swapab_c1x1") << m << "x" << n;
    }
  }
}

// The GEMV config: a candidate at M = 1 only (where swap-AB is not allowed it can be picked), never above.
TEST(GemmConfig, GemvOnlyAtOneRow) {
  const auto limits = h200_limits();
  const std::vector<int> measured = flux::testing::h200_measured_clusters();
  int gemv_at_one = 0;
  for (int64_t n : {512, 2048, 4096, 12288, 28672}) {
    for (int64_t k : {512, 2048, 8192}) {
      gemv_at_one += flux::select_gemm_config(1, n, k, limits, measured, 0, false).config.gemv;
      for (int64_t m : {2, 4, 8, 16, 64}) {
        EXPECT_FALSE(flux::select_gemm_config(m, n, k, limits, measured, 0, false).config.gemv) << m << "x" << n;
      }
      EXPECT_FALSE(flux::select_gemm_config(1, n, k, limits, measured).config.gemv);  // the decode rule's there
    }
  }
  EXPECT_GT(gemv_at_one, 0);
}

TEST(GemmConfig, PingpongOrderWalksTheShorterDimensionInBandsThatExist) {
  // Ping-pong picks walk the shorter dimension of units fastest (column-major when there are at least as many unit
  // columns as rows), in bands of the largest power of two <= 8 lines that exist across the walk. Only the ping-pong
  // configs have kernels here (the others -1), so one of them is picked. M = 300: 3 unit rows of 128 (5 of 64).
  for (auto [m, n] : {std::pair<int64_t, int64_t>{300, 24576}, {300, 768}, {4096, 512}, {8192, 12288}}) {
    flux::GemmSelection s = flux::select_gemm_config(m, n, 4096, h200_limits(), flux::testing::only_pingpong_clusters());
    ASSERT_TRUE(s.config.pingpong) << s.reason;
    const Walk walk = expected_walk(s, m, n);
    EXPECT_EQ(s.raster, walk.col ? flux::Raster::kColMajor : flux::Raster::kRowMajor) << s.reason;
    EXPECT_LE(s.swizzle, walk.lines) << s.reason;
    EXPECT_GT(s.swizzle * 2, std::min<int64_t>(walk.lines, 8)) << s.reason;  // the largest power of two that fits
  }
}

TEST(GemmConfig, SplitKForDecodeNotForLargeM) {
  const auto limits = h200_limits();
  // Decode with few units on 132 SMs, B streamed by a few SMs: split (M = 1, 8: the decode rule's 8 units of 64
  // columns; M = 32: the time model's 16 or 8 units).
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 512, 8192}, {8, 512, 8192}, {32, 4096, 4096}}) {
    flux::GemmSelection s = flux::select_gemm_config(m, n, k, limits);
    EXPECT_GT(s.splits, 1) << s.reason;
    EXPECT_TRUE(s.config.split_k) << s.reason;
    EXPECT_NE(s.reason.find("split-K"), std::string::npos) << s.reason;
  }
  // Many waves: never split.
  for (int64_t m : {4096, 8192}) {
    EXPECT_EQ(flux::select_gemm_config(m, 8192, 8192, limits).splits, 1);
  }
  // split_k = 1: off.
  EXPECT_EQ(flux::select_gemm_config(1, 4096, 4096, limits, {}, 1).splits, 1);
}

TEST(GemmConfig, EverySplitIsValidAndWithinTheWorkspaceBound) {
  const auto limits = h200_limits();
  const int64_t bound = flux::split_k_workspace_bound(limits);
  EXPECT_GT(bound, 0);
  int split = 0;
  for (int64_t m : {1, 2, 7, 33, 64, 127, 200, 333, 512, 1000, 2048}) {
    for (int64_t n : {8, 264, 1536, 4096, 6144, 28672}) {
      for (int64_t k : {8, 520, 1000, 4096, 8192, 14728, 28672}) {
        flux::GemmSelection s = flux::select_gemm_config(m, n, k, limits);
        if (s.splits == 1) continue;
        ++split;
        EXPECT_TRUE(flux::split_k_divides(k, s.splits)) << s.reason;
        EXPECT_GE(k / s.splits, flux::kMinSplitKDepth) << s.reason;
        EXPECT_LE(s.splits, flux::kMaxSplitK) << s.reason;
        EXPECT_TRUE(s.config.split_k) << s.reason;
        EXPECT_LE(int64_t(s.splits) * m * n * 4, bound) << s.reason;
      }
    }
  }
  EXPECT_GT(split, 20);
}

TEST(GemmConfig, SwapAbOnlyWhenAllowed) {
  const auto limits = h200_limits();
  for (int64_t m : {1, 8, 64, 128, 1000, 4096}) {
    for (int64_t n : {1024, 4096, 28672}) {
      EXPECT_FALSE(flux::select_gemm_config(m, n, 4096, limits, {}, 0, false).config.swap_ab);
    }
  }
  bool has_swap = false;
  for (const auto& c : flux::gemm_configs()) has_swap = has_swap || (c.swap_ab && c.split_k && c.pingpong);
  EXPECT_TRUE(has_swap);
}

TEST(GemmConfig, ForcedSplitK) {
  const auto limits = h200_limits();
  flux::GemmSelection s = flux::select_gemm_config(1000, 1024, 4096, limits, {}, 8);
  EXPECT_EQ(s.splits, 8);
  EXPECT_TRUE(s.config.split_k);
  EXPECT_TRUE(flux::split_k_divides(4096, 8));
  EXPECT_FALSE(flux::split_k_divides(4096, 3));
  EXPECT_FALSE(flux::split_k_divides(1000, 8));  // 125 is not a multiple of 8
  EXPECT_THROW(flux::select_gemm_config(16, 1024, 4096, limits, {}, 3), flux::InvalidArgument);
  EXPECT_THROW(flux::select_gemm_config(16, 1024, 4096, limits, {}, flux::kMaxSplitK + 1), flux::InvalidArgument);
  EXPECT_THROW(flux::select_gemm_config(16, 1024, 4096, limits, {}, -1), flux::InvalidArgument);
}

TEST(GemmConfig, HeuristicRejectsBadInput) {
  auto limits = h200_limits();
  EXPECT_THROW(flux::select_gemm_config(0, 128, 128, limits), flux::InvalidArgument);
  limits.sm_count = 0;
  EXPECT_THROW(flux::select_gemm_config(128, 128, 128, limits), flux::InvalidArgument);
}

}  // namespace
