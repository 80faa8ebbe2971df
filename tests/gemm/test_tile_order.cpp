// tests/gemm/test_tile_order.cpp — extension point (a): the tile order is a bijection, segments come in
// ring order, and bands follow the raster (CPU only: the same header code runs in the kernel).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "flux/gemm.h"
#include "flux/tile_order.h"

namespace {

struct Case {
  int64_t m, n;
  int tile_m, tile_n, cluster_m, cluster_n;
  flux::TileOrderSpec spec;
};

std::string describe(const Case& c) {
  return "M=" + std::to_string(c.m) + " N=" + std::to_string(c.n) + " tile " + std::to_string(c.tile_m) + "x" +
         std::to_string(c.tile_n) + " cluster " + std::to_string(c.cluster_m) + "x" + std::to_string(c.cluster_n) +
         " W=" + std::to_string(c.spec.segments) + " first=" + std::to_string(c.spec.first_segment) +
         " seg_rows=" + std::to_string(c.spec.segment_rows) + " raster=" + std::to_string(int(c.spec.raster)) +
         " swizzle=" + std::to_string(c.spec.swizzle);
}

// Every unit visited exactly once, every unit in range.
void expect_bijection(const Case& c) {
  flux::TileOrderMap map =
      flux::tile_order_map_unchecked(c.m, c.n, c.tile_m, c.tile_n, c.cluster_m, c.cluster_n, c.spec);
  const int64_t total = map.total_units();
  ASSERT_EQ(map.units_m, ((c.m + c.tile_m - 1) / c.tile_m + c.cluster_m - 1) / c.cluster_m) << describe(c);
  ASSERT_EQ(map.units_n, ((c.n + c.tile_n - 1) / c.tile_n + c.cluster_n - 1) / c.cluster_n) << describe(c);
  std::vector<int> seen(static_cast<size_t>(total), 0);
  for (int64_t i = 0; i < total; ++i) {
    flux::UnitCoord u = map.unit_at(i);
    ASSERT_GE(u.m, 0) << describe(c) << " linear " << i;
    ASSERT_LT(u.m, map.units_m) << describe(c) << " linear " << i;
    ASSERT_GE(u.n, 0) << describe(c) << " linear " << i;
    ASSERT_LT(u.n, map.units_n) << describe(c) << " linear " << i;
    ++seen[static_cast<size_t>(u.m) * map.units_n + u.n];
  }
  for (int64_t u = 0; u < total; ++u) {
    ASSERT_EQ(seen[static_cast<size_t>(u)], 1) << describe(c) << " unit " << u << " visited " << seen[u] << " times";
  }
}

TEST(TileOrder, BijectionRandomShapesUpTo64Segments) {
  std::mt19937 rng(20261201);
  const int tiles[][2] = {{128, 256}, {128, 128}, {256, 128}, {64, 256}};
  const int clusters[][2] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}};
  for (int trial = 0; trial < 3000; ++trial) {
    Case c;
    c.m = std::uniform_int_distribution<int64_t>(1, 20000)(rng);
    c.n = std::uniform_int_distribution<int64_t>(1, 20000)(rng);
    const auto& t = tiles[rng() % 4];
    const auto& cl = clusters[rng() % 4];
    c.tile_m = t[0];
    c.tile_n = t[1];
    c.cluster_m = cl[0];
    c.cluster_n = cl[1];
    c.spec.segments = std::uniform_int_distribution<int>(1, 64)(rng);
    c.spec.first_segment = std::uniform_int_distribution<int>(0, c.spec.segments - 1)(rng);
    c.spec.segment_rows = (rng() % 3 == 0) ? std::uniform_int_distribution<int64_t>(1, c.m)(rng) : 0;
    c.spec.raster = (rng() % 2) ? flux::Raster::kRowMajor : flux::Raster::kColMajor;
    c.spec.swizzle = 1 << (rng() % 5);
    c.spec.col_bands = (rng() % 2) ? 1 : std::uniform_int_distribution<int>(1, 64)(rng);
    expect_bijection(c);
  }
}

// Column bands come one after the other; inside each band the segments still form a ring.
TEST(TileOrder, ColumnBandsThenSegments) {
  flux::TileOrderSpec spec;
  spec.segments = 4;
  spec.first_segment = 2;
  spec.col_bands = 3;
  spec.raster = flux::Raster::kRowMajor;
  spec.swizzle = 1;
  // 8 unit rows (2 per segment) x 9 unit columns (3 per band), tile 128 x 128, no clusters.
  flux::TileOrderMap map = flux::tile_order_map_unchecked(8 * 128, 9 * 128, 128, 128, 1, 1, spec);
  int64_t i = 0;
  for (int band = 0; band < 3; ++band) {
    for (int k = 0; k < 4; ++k) {
      int segment = (2 + k) % 4;
      for (int u = 0; u < 2 * 3; ++u, ++i) {
        flux::UnitCoord c = map.unit_at(i);
        ASSERT_EQ(c.n / 3, band) << "linear " << i;
        ASSERT_EQ(c.m / 2, segment) << "linear " << i;
      }
    }
  }
  EXPECT_EQ(i, map.total_units());
}

TEST(TileOrder, BijectionEdgeShapes) {
  for (int64_t m : {1, 2, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 4096}) {
    for (int64_t n : {1, 8, 255, 256, 257, 6144}) {
      for (int w : {1, 2, 3, 5, 8, 13, 31, 64}) {
        for (int swizzle : {1, 2, 4, 8, 16}) {
          for (flux::Raster r : {flux::Raster::kRowMajor, flux::Raster::kColMajor}) {
            Case c{m, n, 128, 256, 2, 1, {}};
            c.spec.segments = w;
            c.spec.first_segment = w - 1;
            c.spec.raster = r;
            c.spec.swizzle = swizzle;
            expect_bijection(c);
          }
        }
      }
    }
  }
}

// Segments are visited as a ring from first_segment, each segment's units contiguous in the order.
TEST(TileOrder, SegmentsInRingOrder) {
  for (int w : {2, 3, 4, 7, 8}) {
    for (int first = 0; first < w; ++first) {
      Case c{int64_t(w) * 1024, 4096, 128, 256, 2, 1, {}};
      c.spec.segments = w;
      c.spec.first_segment = first;
      c.spec.raster = flux::Raster::kColMajor;
      c.spec.swizzle = 2;
      flux::TileOrderMap map = flux::tile_order_map_unchecked(c.m, c.n, 128, 256, 2, 1, c.spec);
      const int64_t rows_per_unit = 256;
      int last_position = -1;
      for (int64_t i = 0; i < map.total_units(); ++i) {
        flux::UnitCoord u = map.unit_at(i);
        int segment = static_cast<int>(u.m * rows_per_unit / 1024);  // M / W = 1024 rows per segment
        int position = (segment - first + w) % w;                  // ring position of that segment
        ASSERT_GE(position, last_position) << describe(c) << " linear " << i;
        last_position = position;
      }
      EXPECT_EQ(last_position, w - 1);
      EXPECT_EQ(map.unit_at(0).m * rows_per_unit / 1024, first) << "rank " << first << " must start on its segment";
    }
  }
}

// A unit row belongs to the segment that holds its first row, even when M / W is not a multiple of the unit.
TEST(TileOrder, SegmentBoundariesFollowRows) {
  flux::TileOrderSpec spec;
  spec.segments = 3;
  spec.raster = flux::Raster::kRowMajor;
  spec.swizzle = 1;
  // M = 1000, W = 3: segments of 334 rows; units of 128 rows (tile 128, cluster 1): 8 unit rows.
  flux::TileOrderMap map = flux::tile_order_map_unchecked(1000, 512, 128, 256, 1, 1, spec);
  EXPECT_EQ(map.segment_rows, 334);
  EXPECT_EQ(map.segment_begin(0), 0);
  EXPECT_EQ(map.segment_begin(1), 3);  // unit 3 starts at row 384 >= 334; unit 2 starts at 256 < 334
  EXPECT_EQ(map.segment_begin(2), 6);  // unit 6 starts at row 768 >= 668
  EXPECT_EQ(map.segment_begin(3), 8);
}

// Swap-AB kernels walk the map over C's units transposed (ordered_tile_scheduler.cuh). The heuristic's order for
// them, C's column-major bands of `swizzle` unit columns, is the walk their kernels made before the map was over
// C's units: row-major bands over the kernel's units (its M over C's N), the same swizzle.
TEST(TileOrder, ColumnMajorOverCIsRowMajorOverTheTransposedKernel) {
  std::mt19937_64 rng(2020);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t m = 1 + int64_t(rng() % 3000), n = 8 * (1 + int64_t(rng() % 2000));
    const int32_t tile_m = (trial % 3 == 0) ? 16 : 64, tile_n = (trial % 2 == 0) ? 64 : 128;
    const int32_t cluster_n = 1 + int32_t(rng() % 2);
    const int32_t swizzle = 1 << (rng() % 4);
    flux::TileOrderSpec c_spec;
    c_spec.raster = flux::Raster::kColMajor;
    c_spec.swizzle = swizzle;
    flux::TileOrderSpec kernel_spec = c_spec;
    kernel_spec.raster = flux::Raster::kRowMajor;
    const flux::TileOrderMap over_c = flux::tile_order_map_unchecked(m, n, tile_m, tile_n, 1, cluster_n, c_spec);
    const flux::TileOrderMap over_kernel =
        flux::tile_order_map_unchecked(n, m, tile_n, tile_m, cluster_n, 1, kernel_spec);
    ASSERT_EQ(over_c.total_units(), over_kernel.total_units());
    for (int64_t i = 0; i < over_c.total_units(); ++i) {
      const flux::UnitCoord c = over_c.unit_at(i), k = over_kernel.unit_at(i);
      ASSERT_TRUE(c.m == k.n && c.n == k.m) << m << "x" << n << " tile " << tile_m << "x" << tile_n << " swizzle "
                                            << swizzle << " unit " << i;
    }
  }
}

// The row-segment arithmetic the fused ops share (GEMM+RS's destinations of a tile, AG+GEMM's arrivals
// per M-block, the gather's shard walk), against a row-by-row count.
TEST(RowSegments, MatchRowByRowCount) {
  const flux::RowSegments s{1000, 250};  // W = 4
  EXPECT_EQ(s.count(), 4);
  EXPECT_EQ(s.first(128), 0);
  EXPECT_EQ(s.last(256), 1);              // rows 128..255 straddle segments 0 and 1
  EXPECT_EQ(s.touched(896, 1000), 1);     // the last segment
  EXPECT_EQ(s.touched(0, 1000), 4);
  EXPECT_EQ((flux::RowSegments{60, 10}.touched(0, 60)), 6);  // a block wider than every segment
  const flux::RowSegments short_last{10, 4};                 // 4 + 4 + 2
  EXPECT_EQ(short_last.count(), 3);
  EXPECT_EQ(short_last.end(2), 10);
  EXPECT_EQ(short_last.begin(5), 10);  // past the end: empty
  std::mt19937 gen(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t rows = 1 + int64_t(gen() % 3000), seg = 1 + int64_t(gen() % 700);
    const flux::RowSegments map{rows, seg};
    const int64_t r0 = int64_t(gen() % uint64_t(rows)), r1 = r0 + 1 + int64_t(gen() % uint64_t(rows - r0));
    std::vector<bool> hit(size_t(map.count()), false);
    for (int64_t r = r0; r < r1; ++r) {
      int32_t owner = -1;
      for (int32_t k = 0; k < map.count(); ++k) {
        if (map.begin(k) <= r && r < map.end(k)) owner = k;
      }
      ASSERT_GE(owner, 0) << "row " << r << " of " << rows << " in no segment of " << seg;
      ASSERT_EQ(map.of(r), owner);
      hit[size_t(owner)] = true;
    }
    int32_t n = 0, first = -1, last = -1;
    for (int32_t k = 0; k < map.count(); ++k) {
      if (!hit[size_t(k)]) continue;
      ++n;
      if (first < 0) first = k;
      last = k;
    }
    ASSERT_EQ(map.touched(r0, r1), n) << rows << " rows / " << seg << ", [" << r0 << ", " << r1 << ")";
    ASSERT_EQ(map.first(r0), first);
    ASSERT_EQ(map.last(r1), last);
  }
}

TEST(TileOrder, PlainRowAndColumnMajor) {
  flux::TileOrderSpec spec;
  spec.raster = flux::Raster::kRowMajor;
  spec.swizzle = 1;
  flux::TileOrderMap row = flux::tile_order_map_unchecked(512, 1024, 128, 256, 1, 1, spec);  // 4 x 4 units
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(row.unit_at(i).m, i / 4);
    EXPECT_EQ(row.unit_at(i).n, i % 4);
  }
  spec.raster = flux::Raster::kColMajor;
  flux::TileOrderMap col = flux::tile_order_map_unchecked(512, 1024, 128, 256, 1, 1, spec);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(col.unit_at(i).m, i % 4);
    EXPECT_EQ(col.unit_at(i).n, i / 4);
  }
}

TEST(TileOrder, SwizzleBands) {
  flux::TileOrderSpec spec;
  spec.raster = flux::Raster::kRowMajor;
  spec.swizzle = 2;
  flux::TileOrderMap map = flux::tile_order_map_unchecked(3 * 128, 3 * 256, 128, 256, 1, 1, spec);  // 3 x 3
  // Band 0 = rows 0..1, rows advance fastest: (0,0) (1,0) (0,1) (1,1) (0,2) (1,2); band 1 = row 2.
  const int expect[9][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2}, {2, 0}, {2, 1}, {2, 2}};
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(map.unit_at(i).m, expect[i][0]) << i;
    EXPECT_EQ(map.unit_at(i).n, expect[i][1]) << i;
  }
}

TEST(TileOrder, SpecValidation) {
  flux::TileOrderSpec spec;
  spec.segments = 0;
  EXPECT_THROW(flux::validate_tile_order_spec(spec), flux::InvalidArgument);
  spec.segments = 4;
  spec.first_segment = 4;
  try {
    flux::validate_tile_order_spec(spec);
    FAIL() << "first_segment out of range accepted";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("expected 0..3"), std::string::npos) << e.what();
  }
  spec.first_segment = 0;
  spec.swizzle = 3;
  EXPECT_THROW(flux::validate_tile_order_spec(spec), flux::InvalidArgument);
  spec.swizzle = 0;
  EXPECT_NO_THROW(flux::validate_tile_order_spec(spec));
  spec.col_bands = 0;
  EXPECT_THROW(flux::validate_tile_order_spec(spec), flux::InvalidArgument);
  spec.col_bands = 1;
  // make_tile_order_map needs the raster / swizzle resolved.
  EXPECT_THROW(flux::make_tile_order_map(128, 128, flux::gemm_configs()[0], spec), flux::InvalidArgument);
}

}  // namespace
