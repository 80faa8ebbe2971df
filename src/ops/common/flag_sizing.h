// src/ops/common/flag_sizing.h — how many tile / block flags a fused op's plan allocates: enough for the
// finest grid among the GEMM core's compiled configs (gemm_configs()), so whatever config the heuristic,
// a knob or the tuning cache picks for an M <= max_m, its flag grid fits. Derived from the config table,
// never from a constant that assumes a tile size (a narrower decode tile would otherwise overflow the
// buffer silently); the ops also check each call's grid against what they allocated.
#pragma once

#include <cstdint>

namespace flux::ops {

// max over configs of ceil(max_m / tile_m) * ceil(n / tile_n): flags indexed by (tile row, tile column).
int64_t max_tile_flags(int64_t max_m, int64_t n);
// max over configs of ceil(max_m / tile_m): flags indexed by M-block.
int64_t max_block_flags(int64_t max_m);

}  // namespace flux::ops
