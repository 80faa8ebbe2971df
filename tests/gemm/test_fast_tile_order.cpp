// tests/gemm/test_fast_tile_order.cpp — the kernels' fast per-tile step (src/gemm/fast_tile_order.h) against the
// reference map it stands for (TileOrderMap::unit_at, flux/tile_order.h) and against integer division, on the host
// (the same code runs on the device; only FastDiv's multiply-high differs: __umulhi there, a 64-bit product here).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "flux/tile_order.h"
#include "src/gemm/fast_tile_order.h"

namespace {

using flux::Raster;
using flux::TileOrderMap;
using flux::gemm::FastDiv;
using flux::gemm::FastUnitMap;

TileOrderMap plain_order(int32_t units_m, int32_t units_n, Raster raster, int32_t swizzle) {
  TileOrderMap o;
  o.units_m = units_m;
  o.units_n = units_n;
  o.unit_rows = 128;
  o.segment_rows = int64_t(units_m) * 128;
  o.segments = 1;
  o.raster = int32_t(raster);
  o.swizzle = swizzle;
  o.col_bands = 1;
  return o;
}

TEST(FastDiv, QuotientsEqualIntegerDivision) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any(0, (1u << 31) - 1);
  std::set<uint32_t> divisors = {1, 2, 3, 5, 7, 8, 16, 66, 132, 1000, 65535, 65536, 65537, (1u << 30) + 1, (1u << 31) - 1,
                                 1u << 31};
  for (int i = 0; i < 200; ++i) divisors.insert(1 + any(rng) % 5000);
  for (int i = 0; i < 50; ++i) divisors.insert(1 + any(rng));
  for (uint32_t d : divisors) {
    const FastDiv f(d);
    for (uint32_t n : {0u, 1u, d - 1, d, d + 1, 2 * d - 1, (1u << 31) - 1, (1u << 31) - d}) {
      if (n >= (1u << 31)) continue;
      ASSERT_EQ(f.div(n), n / d) << n << " / " << d;
    }
    for (int i = 0; i < 2000; ++i) {
      const uint32_t n = any(rng);
      ASSERT_EQ(f.div(n), n / d) << n << " / " << d;
    }
  }
}

// Every position of every plain order up to 70 x 70 units, both rasters, every swizzle the plan takes, with and
// without split-K slices: the same unit as the reference map, and every unit exactly once.
TEST(FastUnitMap, PlainOrdersMapEveryPositionAsTheReference) {
  for (Raster raster : {Raster::kRowMajor, Raster::kColMajor}) {
    for (int32_t swizzle : {1, 2, 4, 8, 16}) {
      for (int32_t um = 1; um <= 70; um += (um < 20 ? 1 : 7)) {
        for (int32_t un = 1; un <= 70; un += (un < 20 ? 1 : 5)) {
          const TileOrderMap o = plain_order(um, un, raster, swizzle);
          for (int32_t splits : {1, 3}) {
            const FastUnitMap f = FastUnitMap::make(o, splits);
            const std::string where = std::to_string(um) + " x " + std::to_string(un) + " units, raster " +
                                      std::to_string(int(raster)) + ", swizzle " + std::to_string(swizzle);
            ASSERT_TRUE(f.active) << where;
            EXPECT_EQ(f.splits.div(uint32_t(7 * splits + splits - 1)), 7u) << where;
            std::set<std::pair<int32_t, int32_t>> seen;
            for (int64_t j = 0; j < o.total_units(); ++j) {
              const flux::UnitCoord want = o.unit_at(j);
              const flux::UnitCoord got = f.unit_at(uint32_t(j));
              ASSERT_EQ(got.m, want.m) << where << ", position " << j;
              ASSERT_EQ(got.n, want.n) << where << ", position " << j;
              seen.insert({got.m, got.n});
            }
            EXPECT_EQ(int64_t(seen.size()), o.total_units()) << where;
          }
        }
      }
    }
  }
}

// A large plain order (the corpus's largest GEMMs have ~10^4 units): random positions against the reference.
TEST(FastUnitMap, LargeOrdersMatchTheReferenceAtRandomPositions) {
  std::mt19937 rng(11);
  for (auto [um, un] : {std::pair{1024, 333}, std::pair{4097, 5}, std::pair{3, 60001}, std::pair{46000, 46000}}) {
    for (Raster raster : {Raster::kRowMajor, Raster::kColMajor}) {
      const TileOrderMap o = plain_order(um, un, raster, 8);
      const FastUnitMap f = FastUnitMap::make(o, 1);
      ASSERT_TRUE(f.active);
      std::uniform_int_distribution<int64_t> pos(0, o.total_units() - 1);
      for (int i = 0; i < 20000; ++i) {
        const int64_t j = i < 2 ? (i == 0 ? 0 : o.total_units() - 1) : pos(rng);
        const flux::UnitCoord want = o.unit_at(j), got = f.unit_at(uint32_t(j));
        ASSERT_EQ(got.m, want.m) << um << " x " << un << " position " << j;
        ASSERT_EQ(got.n, want.n) << um << " x " << un << " position " << j;
      }
    }
  }
}

// Orders it does not cover keep the reference map: segments (AllGather+GEMM's rotation), column bands, a swizzle
// that is not a power of two, 2^31 items or more.
TEST(FastUnitMap, OtherOrdersAreLeftToTheReferenceMap) {
  TileOrderMap o = plain_order(64, 32, Raster::kRowMajor, 8);
  EXPECT_TRUE(FastUnitMap::make(o, 1).active);
  TileOrderMap segmented = o;
  segmented.segments = 4;
  EXPECT_FALSE(FastUnitMap::make(segmented, 1).active);
  TileOrderMap banded = o;
  banded.col_bands = 2;
  EXPECT_FALSE(FastUnitMap::make(banded, 1).active);
  TileOrderMap odd = o;
  odd.swizzle = 3;
  EXPECT_FALSE(FastUnitMap::make(odd, 1).active);
  TileOrderMap huge = plain_order(65536, 32768, Raster::kRowMajor, 8);  // 2^31 units
  EXPECT_FALSE(FastUnitMap::make(huge, 1).active);
  EXPECT_FALSE(FastUnitMap::make(o, 1 << 20).active);  // 2^31 items with the slices
  EXPECT_TRUE(FastUnitMap::make(o, 1 << 19).active);
}

}  // namespace
