// tools/bench/sweep_variants.h — the variants a config sweep measures for one GEMM shape, written once for
// `flux-bench gemm --sweep` (bench_gemm.cpp) and `flux-bench tune` (bench_tune.cpp).
//
// For every config compiled for (dtype, layout) — skinny ones only where M fits their tile rows, as the
// heuristic considers them — the config forced unsplit in each raster (row, col) x swizzle (1, 2, 4, 8) (a
// skinny config: row / 1 only, one tile row, the order hardly matters); for the stream-K configs, stream-K
// forced on in each raster x swizzle (1, 4); for the split-K configs, each split factor 2..kMaxSplitK that
// split_k_candidate(K) allows and that keeps the items within two waves of the most clusters `sm_count` SMs hold
// (split_k_within_waves: the heuristic never takes more, so at large M no split is measured), in the heuristic's
// tile order. A stream-K variant is measured only where the
// plan's select(M) really takes stream-K (where the units leave a partial wave): the callers check that,
// since it needs the plan (its occupancy).
#pragma once

#include <cstdint>
#include <vector>

#include "flux/gemm.h"

namespace flux::bench {

// GemmOptions for each variant, each `base` with config, split_k, order (and stream_k) set.
std::vector<GemmOptions> sweep_variants(DType dtype, WeightLayout layout, int64_t m, int64_t n, int64_t k,
                                        int32_t sm_count, const GemmOptions& base = GemmOptions{});

}  // namespace flux::bench
