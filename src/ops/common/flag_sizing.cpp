// src/ops/common/flag_sizing.cpp — see flag_sizing.h.
#include "src/ops/common/flag_sizing.h"

#include <algorithm>

#include "flux/gemm.h"
#include "src/common/check.h"

namespace flux::ops {

int64_t max_tile_flags(int64_t max_m, int64_t n) {
  FLUX_CHECK_ARG(max_m >= 1 && n >= 1, "flux: flag grid for max_m = ", max_m, ", n = ", n, " (expected both >= 1)");
  int64_t most = 0;
  for (const GemmConfigInfo& c : gemm_configs()) {
    most = std::max(most, ((max_m + c.tile_m - 1) / c.tile_m) * ((n + c.tile_n - 1) / c.tile_n));
  }
  return most;
}

int64_t max_block_flags(int64_t max_m) {
  FLUX_CHECK_ARG(max_m >= 1, "flux: block flags for max_m = ", max_m, " (expected >= 1)");
  int64_t most = 0;
  for (const GemmConfigInfo& c : gemm_configs()) most = std::max(most, (max_m + c.tile_m - 1) / c.tile_m);
  return most;
}

}  // namespace flux::ops
