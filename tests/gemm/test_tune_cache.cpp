// tests/gemm/test_tune_cache.cpp — the GEMM core's tuning cache on the CPU: M buckets, the file format
// (write, read back), rejection of a cache for another GPU / SM count / build with a one-line warning,
// errors naming a malformed file and line, and how a cached choice replaces the heuristic's.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "flux/error.h"
#include "flux/gemm.h"
#include "src/gemm/tune_cache.h"

namespace {

using flux::gemm::TuneCache;
using flux::gemm::TuneChoice;
using flux::gemm::TuneKey;

std::string temp_path(const char* name) { return std::string("/tmp/flux_test_") + name + ".jsonl"; }

TEST(TuneCache, MBuckets) {
  EXPECT_EQ(TuneCache::m_bucket(1), 1);
  EXPECT_EQ(TuneCache::m_bucket(2), 2);
  EXPECT_EQ(TuneCache::m_bucket(3), 4);
  EXPECT_EQ(TuneCache::m_bucket(64), 64);
  EXPECT_EQ(TuneCache::m_bucket(65), 128);
  EXPECT_EQ(TuneCache::m_bucket(16384), 16384);
  EXPECT_THROW(TuneCache::m_bucket(0), flux::InvalidArgument);
}

TEST(TuneCache, WritesAndReadsBackKeyedByShapeAndSms) {
  TuneCache cache;
  TuneKey a{flux::DType::kBF16, flux::WeightLayout::kNK, 4096, 4096, 132, 64};
  TuneKey b = a;
  b.sms = 124;  // a fused op's GEMM budget is another key
  cache.put(a, TuneChoice{"64x256x64_pingpong_c1x2", flux::Raster::kRowMajor, 1, 0.0123});
  cache.put(b, TuneChoice{"128x128x64_pingpong_c1x2", flux::Raster::kColMajor, 4, 0.0150});
  const std::string path = temp_path("roundtrip");
  cache.save(path, "NVIDIA H200", 132);
  std::string warning;
  TuneCache back = TuneCache::load(path, "NVIDIA H200", 132, &warning);
  EXPECT_TRUE(warning.empty()) << warning;
  ASSERT_EQ(back.size(), 2u);
  const TuneChoice* ca = back.find(a);
  const TuneChoice* cb = back.find(b);
  ASSERT_TRUE(ca && cb);
  EXPECT_EQ(ca->config, "64x256x64_pingpong_c1x2");
  EXPECT_EQ(cb->raster, flux::Raster::kColMajor);
  EXPECT_EQ(cb->swizzle, 4);
  EXPECT_NEAR(ca->ms, 0.0123, 1e-9);
  TuneKey other = a;
  other.m_bucket = 128;
  EXPECT_EQ(back.find(other), nullptr);
  EXPECT_EQ(back.digest(), cache.digest());
  cache.put(a, TuneChoice{"128x256x64_coop_c2x1", flux::Raster::kRowMajor, 1, 0.02});
  EXPECT_NE(back.digest(), cache.digest());
  std::remove(path.c_str());
}

TEST(TuneCache, CacheForAnotherGpuSmCountOrBuildIsIgnoredWithAWarning) {
  TuneCache cache;
  cache.put(TuneKey{flux::DType::kFP16, flux::WeightLayout::kKN, 1024, 512, 132, 8},
            TuneChoice{"128x128x64_pingpong_c1x2", flux::Raster::kRowMajor, 8, 0.01});
  const std::string path = temp_path("reject");
  cache.save(path, "NVIDIA H200", 132);
  std::string warning;
  EXPECT_EQ(TuneCache::load(path, "NVIDIA H100 80GB HBM3", 132, &warning).size(), 0u);
  EXPECT_NE(warning.find("ignoring the tune cache"), std::string::npos) << warning;
  EXPECT_NE(warning.find("NVIDIA H200"), std::string::npos) << warning;
  EXPECT_EQ(warning.find('\n'), std::string::npos) << "one line";
  warning.clear();
  EXPECT_EQ(TuneCache::load(path, "NVIDIA H200", 114, &warning).size(), 0u);
  EXPECT_NE(warning.find("132 SMs"), std::string::npos) << warning;
  // Another build: a different config table.
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  const std::string build = TuneCache::build_id();
  text.replace(text.find(build), build.size(), "0000000000000000");
  std::ofstream(path, std::ios::trunc) << text;
  warning.clear();
  EXPECT_EQ(TuneCache::load(path, "NVIDIA H200", 132, &warning).size(), 0u);
  EXPECT_NE(warning.find("another build"), std::string::npos) << warning;
  std::remove(path.c_str());
}

TEST(TuneCache, MalformedOrMissingFilesAreNamed) {
  const std::string path = temp_path("bad");
  std::ofstream(path, std::ios::trunc) << "{\"flux_tune_cache\": 1, \"gpu\": \"G\", \"sm_count\": 1, \"build\": \""
                                       << TuneCache::build_id() << "\"}\n{\"dtype\": \"bf16\", \"n\": oops\n";
  try {
    TuneCache::load(path, "G", 1, nullptr);
    FAIL() << "a malformed cache was accepted";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
  EXPECT_THROW(TuneCache::load("/nonexistent/cache.jsonl", "G", 1, nullptr), flux::InvalidArgument);
}

TEST(TuneCache, ACachedChoiceReplacesTheHeuristicsTilesAndOrder) {
  flux::DeviceLimits limits;
  limits.sm_count = 132;
  const flux::GemmSelection heuristic = flux::select_gemm_config(3000, 1000, 4096, limits);
  flux::GemmSelection sel = heuristic;
  TuneChoice c{"256x128x64_coop_c1x2", flux::Raster::kColMajor, 2, 0.5};
  ASSERT_TRUE(flux::gemm::apply_tune_choice(c, 3000, 1000, 4096, "test.jsonl", &sel));
  EXPECT_STREQ(sel.config.name, "256x128x64_coop_c1x2");
  EXPECT_EQ(sel.tiles_m, (3000 + 255) / 256);
  EXPECT_EQ(sel.tiles_n, (1000 + 127) / 128);
  EXPECT_EQ(sel.raster, flux::Raster::kColMajor);
  EXPECT_EQ(sel.swizzle, 2);
  EXPECT_NE(sel.reason.find("tune cache test.jsonl"), std::string::npos) << sel.reason;
  flux::GemmSelection unchanged = heuristic;
  EXPECT_FALSE(flux::gemm::apply_tune_choice(TuneChoice{"512x512_unknown", flux::Raster::kRowMajor, 1, 0}, 3000, 1000,
                                             4096, "x", &unchanged));
  EXPECT_STREQ(unchanged.config.name, heuristic.config.name);
}

TEST(TuneCache, ACachedSplitIsAppliedOnlyWhereItIsPossible) {
  flux::DeviceLimits limits;
  limits.sm_count = 132;
  flux::GemmSelection sel = flux::select_gemm_config(16, 4096, 4096, limits);
  TuneChoice split{"64x256x64_pingpong_c1x2", flux::Raster::kRowMajor, 1, 0.01, 4};
  ASSERT_TRUE(flux::gemm::apply_tune_choice(split, 16, 4096, 4096, "t", &sel));
  EXPECT_EQ(sel.splits, 4);
  EXPECT_NE(sel.reason.find("splits 4"), std::string::npos) << sel.reason;
  // A config without partial-output kernels, or a K the split does not divide into multiples of 8.
  flux::GemmSelection other = flux::select_gemm_config(16, 4096, 4096, limits);
  EXPECT_FALSE(flux::gemm::apply_tune_choice(TuneChoice{"128x256x64_coop_c2x1", flux::Raster::kRowMajor, 1, 0.01, 4}, 16,
                                             4096, 4096, "t", &other));
  EXPECT_FALSE(flux::gemm::apply_tune_choice(split, 16, 4096, 4104, "t", &other));
  EXPECT_EQ(other.splits, flux::select_gemm_config(16, 4096, 4096, limits).splits);
}

TEST(TuneCache, SplitsRoundTripThroughTheFile) {
  const std::string path = ::testing::TempDir() + "/flux_tune_splits.jsonl";
  TuneCache cache;
  cache.put(flux::gemm::TuneKey{flux::DType::kFP16, flux::WeightLayout::kKN, 4096, 4096, 132, 16},
            TuneChoice{"128x128x64_pingpong_c1x2", flux::Raster::kRowMajor, 2, 0.02, 8});
  cache.save(path, "G", 132);
  TuneCache back = TuneCache::load(path, "G", 132, nullptr);
  const TuneChoice* c = back.find(flux::gemm::TuneKey{flux::DType::kFP16, flux::WeightLayout::kKN, 4096, 4096, 132, 16});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->splits, 8);
  EXPECT_EQ(back.digest(), cache.digest());
  std::remove(path.c_str());
}

}  // namespace
