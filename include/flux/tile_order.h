// flux/tile_order.h — the order in which the persistent GEMM visits output tiles.
//
// Contract (host and device, no CUDA dependency so CPU tests can enumerate it):
//   The output C [M, N] is cut into tiles of tile_m x tile_n; tiles are grouped into "units" of
//   cluster_m x cluster_n tiles (one unit per thread-block cluster). The M range is split into
//   `segments` row segments of `segment_rows` rows (the last one takes the remainder); a unit row
//   belongs to the segment holding its first row. The unit columns are split into `col_bands`
//   near-equal column bands. The persistent scheduler visits unit linear index 0, 1, 2, ... in this
//   order:
//     column band 0, 1, ... (outermost; one band = all rows of some unit columns);
//     inside a band, segments first_segment, first_segment+1, ... (mod segments) — a ring;
//     inside a (band, segment) block, bands of `swizzle` unit rows (kRowMajor) or unit columns (kColMajor):
//       kRowMajor: band after band down M; inside a band the band's rows advance fastest, then N.
//       kColMajor: band after band along N; inside a band the band's columns advance fastest, then M.
//   With segments = 1 and swizzle = 1 this is plain row-major (N fastest) or column-major (M fastest).
//   The map from linear index to unit is a bijection for every M, N, tile shape and segment count
//   (tests/gemm/test_tile_order.cpp checks W up to 64).
//
// Why segments: a fused op wants rank r to start on a different part of M than its peers
// (GEMM+RS: ranks do not all push to one destination at once; AG+GEMM: start on the local shard).
// Why column bands: with short segments a segment-major order streams all of B once per segment;
// banding N keeps one band of B in L2 while every segment of that band is computed.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define FLUX_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define FLUX_HOST_DEVICE inline
#endif

namespace flux {

// Rows [0, rows) cut into segments of segment_rows rows, the last one taking the remainder: a fused
// op's per-rank row segments (GEMM+RS: the rows rank s owns; AG+GEMM: the shard rank s holds). The one
// rows <-> segments arithmetic of the library, host and device; segments past the end are empty.
struct RowSegments {
  int64_t rows = 0;
  int64_t segment_rows = 1;  // >= 1

  FLUX_HOST_DEVICE int32_t count() const { return int32_t((rows + segment_rows - 1) / segment_rows); }
  FLUX_HOST_DEVICE int64_t begin(int32_t s) const {
    const int64_t r = int64_t(s) * segment_rows;
    return r < rows ? r : rows;
  }
  FLUX_HOST_DEVICE int64_t end(int32_t s) const { return begin(s + 1); }
  FLUX_HOST_DEVICE int32_t of(int64_t row) const { return int32_t(row / segment_rows); }
  // The segments rows [r0, r1) (r0 < r1) touch: first(r0) ..= last(r1), touched() of them.
  FLUX_HOST_DEVICE int32_t first(int64_t r0) const { return of(r0); }
  FLUX_HOST_DEVICE int32_t last(int64_t r1) const { return of(r1 - 1); }
  FLUX_HOST_DEVICE int32_t touched(int64_t r0, int64_t r1) const { return last(r1) - first(r0) + 1; }
};

enum class Raster : int32_t {
  kAuto = -1,     // let the config heuristic choose
  kRowMajor = 0,  // N fastest within a band of unit rows
  kColMajor = 1,  // M fastest within a band of unit columns
};

// What the caller asks for (part of GemmOptions). Units are rows of C, not tiles, so the caller
// need not know the tile shape the plan picks.
struct TileOrderSpec {
  int32_t segments = 1;       // number of M segments (the TP world size for fused ops), 1..kMaxSegments
  int32_t first_segment = 0;  // segment visited first, 0..segments-1
  int64_t segment_rows = 0;   // rows per segment; 0 means ceil(M / segments)
  Raster raster = Raster::kAuto;
  int32_t swizzle = 0;        // band width in units (1, 2, 4, 8, 16); 0 means auto
  int32_t col_bands = 1;      // column bands visited one after the other (outermost), 1..kMaxColBands
};

constexpr int32_t kMaxSegments = 1024;
constexpr int32_t kMaxColBands = 1024;

struct UnitCoord {
  int32_t m;  // unit row    (tile row = m * cluster_m + cta offset)
  int32_t n;  // unit column (tile col = n * cluster_n + cta offset)
};

// The resolved order, built on the host by make_tile_order_map() and passed to the kernel by value.
struct TileOrderMap {
  int32_t units_m = 0;       // unit rows    = ceil(ceil(M / tile_m) / cluster_m)
  int32_t units_n = 0;       // unit columns = ceil(ceil(N / tile_n) / cluster_n)
  int64_t unit_rows = 0;     // rows of C per unit row = tile_m * cluster_m
  int64_t segment_rows = 0;  // rows per segment (>= 1)
  int32_t segments = 1;
  int32_t first_segment = 0;
  int32_t raster = 0;        // Raster::kRowMajor or kColMajor (resolved)
  int32_t swizzle = 1;       // >= 1
  int32_t col_bands = 1;     // >= 1 (more bands than unit columns leaves some bands empty)

  FLUX_HOST_DEVICE int64_t total_units() const { return int64_t(units_m) * units_n; }

  // First unit row of segment s (0 <= s <= segments); monotone, begin(0) = 0, begin(segments) = units_m.
  FLUX_HOST_DEVICE int32_t segment_begin(int32_t s) const {
    if (s >= segments) return units_m;
    int64_t first_row = RowSegments{int64_t(segments) * segment_rows, segment_rows}.begin(s);
    int64_t u = (first_row + unit_rows - 1) / unit_rows;  // first unit row whose first row >= first_row
    return u < units_m ? int32_t(u) : units_m;
  }

  // Segment visited at ring position k (0 <= k < segments).
  FLUX_HOST_DEVICE int32_t segment_at(int32_t k) const {
    int32_t s = first_segment + k;
    return s >= segments ? s - segments : s;
  }

  // First unit column of column band b (0 <= b <= col_bands); begin(col_bands) = units_n.
  FLUX_HOST_DEVICE int32_t col_band_begin(int32_t b) const {
    return int32_t(int64_t(b) * units_n / col_bands);
  }

  // Unit visited at position `linear` (0 <= linear < total_units()).
  FLUX_HOST_DEVICE UnitCoord unit_at(int64_t linear) const {
    int32_t col0 = 0, cols = units_n;
    if (col_bands > 1) {
      for (int32_t b = 0; b < col_bands; ++b) {
        int32_t c0 = col_band_begin(b), c1 = col_band_begin(b + 1);
        int64_t size = int64_t(c1 - c0) * units_m;
        if (linear < size) {
          col0 = c0;
          cols = c1 - c0;
          break;
        }
        linear -= size;
      }
    }
    int32_t row0 = 0, rows = units_m;
    if (segments > 1) {
      for (int32_t k = 0; k < segments; ++k) {
        int32_t s = segment_at(k);
        int32_t b0 = segment_begin(s), b1 = segment_begin(s + 1);
        int64_t size = int64_t(b1 - b0) * cols;
        if (linear < size) {
          row0 = b0;
          rows = b1 - b0;
          break;
        }
        linear -= size;
      }
    }
    return map_in_block(linear, row0, rows, col0, cols);
  }

  // Bands inside one rectangle of unit rows [row0, row0+rows) x unit columns [col0, col0+cols).
  FLUX_HOST_DEVICE UnitCoord map_in_block(int64_t j, int32_t row0, int32_t rows, int32_t col0,
                                          int32_t cols) const {
    if (raster == int32_t(Raster::kRowMajor)) {
      int64_t band_units = int64_t(swizzle) * cols;
      int32_t band = int32_t(j / band_units);
      int64_t jj = j - int64_t(band) * band_units;
      int32_t band_rows = rows - band * swizzle;
      if (band_rows > swizzle) band_rows = swizzle;
      return UnitCoord{row0 + band * swizzle + int32_t(jj % band_rows), col0 + int32_t(jj / band_rows)};
    }
    int64_t band_units = int64_t(swizzle) * rows;
    int32_t band = int32_t(j / band_units);
    int64_t jj = j - int64_t(band) * band_units;
    int32_t band_cols = cols - band * swizzle;
    if (band_cols > swizzle) band_cols = swizzle;
    return UnitCoord{row0 + int32_t(jj / band_cols), col0 + band * swizzle + int32_t(jj % band_cols)};
  }
};

// Resolve a spec against a problem and a tile/cluster shape. Raster and swizzle must already be
// resolved (not kAuto / 0); validation with clear messages lives in make_tile_order_map (gemm.cpp),
// this header only computes.
FLUX_HOST_DEVICE TileOrderMap tile_order_map_unchecked(int64_t m, int64_t n, int32_t tile_m, int32_t tile_n,
                                                       int32_t cluster_m, int32_t cluster_n,
                                                       TileOrderSpec const& spec) {
  TileOrderMap map;
  int64_t tiles_m = (m + tile_m - 1) / tile_m;
  int64_t tiles_n = (n + tile_n - 1) / tile_n;
  map.units_m = int32_t((tiles_m + cluster_m - 1) / cluster_m);
  map.units_n = int32_t((tiles_n + cluster_n - 1) / cluster_n);
  map.unit_rows = int64_t(tile_m) * cluster_m;
  map.segments = spec.segments;
  map.first_segment = spec.first_segment;
  int64_t seg_rows = spec.segment_rows > 0 ? spec.segment_rows : (m + spec.segments - 1) / spec.segments;
  map.segment_rows = seg_rows > 0 ? seg_rows : 1;
  map.raster = int32_t(spec.raster);
  map.swizzle = spec.swizzle;
  map.col_bands = spec.col_bands > 0 ? spec.col_bands : 1;
  return map;
}

}  // namespace flux
