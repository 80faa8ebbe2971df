// tests/tools/test_sweep_variants.cpp — the variants `flux-bench gemm --sweep` and `flux-bench tune` measure
// (tools/bench/sweep_variants.h): every compiled config in each raster x swizzle unsplit, skinny configs once and
// only at decode M, stream-K variants of the stream-K configs, every allowed split factor of the split-K configs
// within two waves of items (none at large M); nothing twice, the base options kept. Checked against the config
// table, not against a copy of the loops.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>

#include "flux/gemm.h"
#include "tools/bench/sweep_variants.h"

namespace {

using flux::DType;
using flux::GemmConfigInfo;
using flux::GemmOptions;
using flux::Raster;
using flux::StreamKMode;
using flux::WeightLayout;

struct Counts {
  int whole = 0;     // unsplit, stream-K not forced
  int stream_k = 0;  // stream-K forced on
  std::set<int32_t> splits;
};

std::map<std::string, Counts> count(const std::vector<GemmOptions>& variants) {
  std::map<std::string, Counts> by_config;
  std::set<std::tuple<std::string, int, int32_t, int32_t, int>> seen;
  for (const GemmOptions& o : variants) {
    EXPECT_TRUE(seen.emplace(o.config, int(o.order.raster), o.order.swizzle, o.split_k, int(o.stream_k)).second)
        << "variant twice: " << o.config << " raster " << int(o.order.raster) << " swizzle " << o.order.swizzle
        << " splits " << o.split_k;
    Counts& c = by_config[o.config];
    if (o.split_k > 1) {
      EXPECT_EQ(o.order.raster, Raster::kAuto) << o.config << ": split variants run the heuristic's order";
      c.splits.insert(o.split_k);
    } else if (o.stream_k == StreamKMode::kOn) {
      ++c.stream_k;
    } else {
      EXPECT_EQ(o.split_k, 1) << o.config << ": whole-tile variants are forced unsplit";
      ++c.whole;
    }
  }
  return by_config;
}

constexpr int32_t kSms = 132;

void check_shape(DType dtype, WeightLayout layout, int64_t m, int64_t n, int64_t k) {
  SCOPED_TRACE(std::string(flux::to_string(dtype)) + " " + flux::to_string(layout) + " M " + std::to_string(m) +
               " N " + std::to_string(n) + " K " + std::to_string(k));
  GemmOptions base;
  base.max_sms = 124;
  base.tune_cache = "none";
  const auto variants = flux::bench::sweep_variants(dtype, layout, m, n, k, kSms, base);
  for (const GemmOptions& o : variants) {
    EXPECT_EQ(o.max_sms, 124) << "base options kept";
    EXPECT_EQ(o.tune_cache, "none") << "base options kept";
  }
  const auto by_config = count(variants);
  int expected_configs = 0;
  for (const GemmConfigInfo& cfg : flux::gemm_configs()) {
    const bool compiled = flux::gemm_config_compiled(cfg, dtype, layout);
    const bool considered = compiled && (!cfg.skinny || m <= cfg.tile_m);
    auto it = by_config.find(cfg.name);
    if (!considered) {
      EXPECT_TRUE(it == by_config.end()) << cfg.name << (compiled ? " (skinny, M above its tile rows)" : " (not compiled)");
      continue;
    }
    ++expected_configs;
    ASSERT_TRUE(it != by_config.end()) << cfg.name << " missing";
    EXPECT_EQ(it->second.whole, cfg.skinny ? 1 : 8) << cfg.name << ": rasters x swizzles";
    EXPECT_EQ(it->second.stream_k, cfg.stream_k ? 4 : 0) << cfg.name;
    std::set<int32_t> want;
    if (cfg.split_k) {
      // Two waves of items on the most clusters 132 SMs hold: units x S <= 2 x 132 / cluster size (x 4 CTAs per SM
      // for a skinny config), computed here from the tiles, not by the function under test.
      const int64_t units = ((m + cfg.tile_m - 1) / cfg.tile_m + cfg.cluster_m - 1) / cfg.cluster_m *
                            (((n + cfg.tile_n - 1) / cfg.tile_n + cfg.cluster_n - 1) / cfg.cluster_n);
      const int64_t clusters = kSms / (cfg.cluster_m * cfg.cluster_n) * (cfg.skinny ? 4 : 1);
      for (int32_t s = 2; s <= flux::kMaxSplitK; ++s) {
        if (flux::split_k_candidate(k, s) && units * s <= 2 * clusters) want.insert(s);
      }
    }
    EXPECT_EQ(it->second.splits, want) << cfg.name;
  }
  EXPECT_EQ(int(by_config.size()), expected_configs);
  EXPECT_GT(expected_configs, 0);
}

TEST(SweepVariants, EveryCompiledConfigOnceEachWay) {
  for (DType dtype : {DType::kBF16, DType::kFP16}) {
    for (WeightLayout layout : {WeightLayout::kNK, WeightLayout::kKN}) {
      check_shape(dtype, layout, 8, 4096, 4096);     // decode: the skinny configs too ([N, K] only), many split factors
      check_shape(dtype, layout, 64, 8192, 12288);   // some factors cut by the two-wave bound
      check_shape(dtype, layout, 4096, 8192, 1000);  // no skinny config, no split (many tiles)
    }
  }
}

TEST(SweepVariants, DecodeHasTheSkinnyConfigsLargeMNot) {
  auto names = [](int64_t m) {
    std::set<std::string> s;
    for (const GemmOptions& o : flux::bench::sweep_variants(DType::kBF16, WeightLayout::kNK, m, 4096, 4096, kSms)) {
      s.insert(o.config);
    }
    return s;
  };
  int skinny = 0;
  for (const GemmConfigInfo& cfg : flux::gemm_configs()) {
    if (!cfg.skinny || !flux::gemm_config_compiled(cfg, DType::kBF16, WeightLayout::kNK)) continue;
    ++skinny;
    EXPECT_EQ(names(1).count(cfg.name), 1u) << cfg.name;
    EXPECT_EQ(names(cfg.tile_m + 1).count(cfg.name), 0u) << cfg.name;
  }
  EXPECT_GT(skinny, 0) << "the build has skinny configs for bf16 [N, K]";
}

TEST(SweepVariants, NoSplitWhereTheItemsExceedTwoWaves) {
  // 4096 x 8192: 512 units of 128x128 ping-pong c1x2 on 66 clusters, already > 2 waves unsplit.
  for (const GemmOptions& o : flux::bench::sweep_variants(DType::kBF16, WeightLayout::kNK, 4096, 8192, 4096, kSms)) {
    EXPECT_LE(o.split_k, 1) << o.config << " split " << o.split_k << " at M = 4096";
  }
  // Fewer SMs (a fused op's budget) leave fewer factors at a decode shape.
  auto splits = [](int32_t sms) {
    std::set<int32_t> s;
    for (const GemmOptions& o : flux::bench::sweep_variants(DType::kBF16, WeightLayout::kNK, 64, 8192, 8192, sms)) {
      if (o.config == "64x256x64_pingpong_c1x2" && o.split_k > 1) s.insert(o.split_k);
    }
    return s;
  };
  const auto all = splits(132), few = splits(64);  // 16 units: S <= 8 on 66 clusters, S <= 4 on 32
  EXPECT_EQ(all, (std::set<int32_t>{2, 4, 8}));
  EXPECT_EQ(few, (std::set<int32_t>{2, 4}));
  EXPECT_LT(few.size(), all.size());
  for (int32_t s : few) EXPECT_EQ(all.count(s), 1u) << s;
}

}  // namespace
