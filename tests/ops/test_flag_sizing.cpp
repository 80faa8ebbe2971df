// tests/ops/test_flag_sizing.cpp — the fused ops' flag buffers are sized from the compiled config table:
// every config's tile grid and M-block count fit for every M up to max_m, and the bound is reached by one.
#include <gtest/gtest.h>

#include <algorithm>

#include "flux/error.h"
#include "flux/gemm.h"
#include "src/ops/common/flag_sizing.h"

namespace {

TEST(FlagSizing, EveryCompiledConfigsGridFits) {
  ASSERT_FALSE(flux::gemm_configs().empty());
  for (int64_t max_m : {1, 7, 64, 127, 1000, 3000, 16384}) {
    for (int64_t n : {8, 200, 4096, 12288}) {
      const int64_t tiles = flux::ops::max_tile_flags(max_m, n);
      const int64_t blocks = flux::ops::max_block_flags(max_m);
      bool reached_tiles = false, reached_blocks = false;
      for (const flux::GemmConfigInfo& c : flux::gemm_configs()) {
        for (int64_t m : {int64_t(1), max_m / 2 + 1, max_m}) {  // any M a plan for max_m runs
          const int64_t tm = (m + c.tile_m - 1) / c.tile_m, tn = (n + c.tile_n - 1) / c.tile_n;
          EXPECT_LE(tm * tn, tiles) << c.name << " M=" << m << " N=" << n;
          EXPECT_LE(tm, blocks) << c.name << " M=" << m;
          reached_tiles = reached_tiles || (m == max_m && tm * tn == tiles);
          reached_blocks = reached_blocks || (m == max_m && tm == blocks);
        }
      }
      EXPECT_TRUE(reached_tiles && reached_blocks) << "the bound is not the finest compiled grid";
    }
  }
  EXPECT_THROW(flux::ops::max_tile_flags(0, 128), flux::InvalidArgument);
  EXPECT_THROW(flux::ops::max_block_flags(-1), flux::InvalidArgument);
}

}  // namespace
