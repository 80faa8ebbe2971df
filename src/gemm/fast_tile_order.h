// src/gemm/fast_tile_order.h — the kernels' per-tile step of the tile order, without 64-bit division.
//
// OrderedTileScheduler (src/gemm/kernel/ordered_tile_scheduler.cuh) maps work item w to its tile with
// TileOrderMap::unit_at (flux/tile_order.h) and w / splits: in 64-bit integers, four divisions per tile, each a
// software routine of ~100 dependent instructions on the GPU. Every warp of the CTA runs that step before each of
// its tiles (the producer before the tile's loads, each math warp group before its MMAs), where the tile's MMAs
// at short K last ~3 us (8 k-steps of 128 x 128 x 64).
// FastUnitMap is the same map for the plain order (one segment, one column band, a power-of-two swizzle, fewer
// than 2^31 work items: every plain GEMM's), with the divisors fixed on the host: one multiply-high per
// division (FastDiv: the round-up method CUTLASS's FastDivmod uses), shifts for the swizzle. Orders it does not
// cover (segments, column bands: the fused ops') keep TileOrderMap::unit_at. tests/gemm/test_fast_tile_order.cpp
// checks both against each other on the host.
#pragma once

#include <cstdint>

#include "flux/tile_order.h"

namespace flux::gemm {

// ceil(log2(x)) for 1 <= x <= 2^31 (exact for powers of two).
FLUX_HOST_DEVICE uint32_t ceil_log2(uint32_t x) {
  uint32_t l = 0;
  while ((uint64_t(1) << l) < x) ++l;
  return l;
}

// n / divisor for 0 <= n < 2^31, divisor in [1, 2^31]: the quotient is the high word of n x multiplier shifted
// right, with multiplier = ceil(2^p / divisor), p = 31 + ceil(log2(divisor)).
struct FastDiv {
  uint32_t divisor = 1;
  uint32_t multiplier = 0;
  uint32_t shift = 0;

  FastDiv() = default;
  FLUX_HOST_DEVICE explicit FastDiv(uint32_t d) : divisor(d) {
    if (d > 1) {
      const uint32_t p = 31 + ceil_log2(d);
      multiplier = uint32_t(((uint64_t(1) << p) + d - 1) / d);
      shift = p - 32;
    }
  }

  FLUX_HOST_DEVICE uint32_t div(uint32_t n) const {
    if (divisor == 1) return n;
#if defined(__CUDA_ARCH__)
    return __umulhi(n, multiplier) >> shift;
#else
    return uint32_t((uint64_t(n) * multiplier) >> 32) >> shift;
#endif
  }
};

struct FastUnitMap {
  bool active = false;       // the order is plain (see above); otherwise use TileOrderMap::unit_at
  bool row_major = true;
  uint32_t swizzle_log2 = 0; // the swizzle (a power of two) is 1 << swizzle_log2
  int32_t full_bands = 0;    // bands of `swizzle` unit rows (row-major) or columns (column-major)
  FastDiv band_units;        // units per full band
  FastDiv last_band;         // rows (columns) of the last band when it is partial; 1 when there is none
  FastDiv splits;            // work items per unit (split-K slices)

  // The fast map of `order` run with `splits` slices, or an inactive one where the order is not plain.
  FLUX_HOST_DEVICE static FastUnitMap make(const TileOrderMap& order, int32_t splits) {
    FastUnitMap f;
    const int64_t items = order.total_units() * int64_t(splits);
    const bool pow2 = order.swizzle >= 1 && (order.swizzle & (order.swizzle - 1)) == 0;
    if (order.segments != 1 || order.col_bands != 1 || !pow2 || splits < 1 || items <= 0 ||
        items >= (int64_t(1) << 31) || order.units_m <= 0 || order.units_n <= 0) {
      return f;
    }
    f.active = true;
    f.row_major = order.raster == int32_t(Raster::kRowMajor);
    f.swizzle_log2 = ceil_log2(uint32_t(order.swizzle));
    const int32_t banded = f.row_major ? order.units_m : order.units_n;  // the dimension cut into bands
    const int32_t across = f.row_major ? order.units_n : order.units_m;
    f.full_bands = banded >> f.swizzle_log2;
    f.band_units = FastDiv(uint32_t(order.swizzle) * uint32_t(across));
    const int32_t rest = banded & (order.swizzle - 1);
    f.last_band = FastDiv(rest > 0 ? uint32_t(rest) : 1u);
    f.splits = FastDiv(uint32_t(splits));
    return f;
  }

  // Unit visited at position j (0 <= j < total units): TileOrderMap::unit_at(j) of the plain order.
  FLUX_HOST_DEVICE UnitCoord unit_at(uint32_t j) const {
    const uint32_t band = band_units.div(j);
    const uint32_t jj = j - band * band_units.divisor;
    uint32_t along, in_band;  // position along the band, and across it (within its rows / columns)
    if (int32_t(band) < full_bands) {
      along = jj >> swizzle_log2;
      in_band = jj & ((1u << swizzle_log2) - 1);
    } else {
      along = last_band.div(jj);
      in_band = jj - along * last_band.divisor;
    }
    const int32_t banded = int32_t((band << swizzle_log2) + in_band);
    return row_major ? UnitCoord{banded, int32_t(along)} : UnitCoord{int32_t(along), banded};
  }
};

}  // namespace flux::gemm
