// tools/bench/sweep_variants.cpp — see sweep_variants.h.
#include "tools/bench/sweep_variants.h"

namespace flux::bench {

std::vector<GemmOptions> sweep_variants(DType dtype, WeightLayout layout, int64_t m, int64_t n, int64_t k,
                                        int32_t sm_count, const GemmOptions& base) {
  std::vector<GemmOptions> variants;
  for (const GemmConfigInfo& cfg : gemm_configs()) {
    if (!gemm_config_compiled(cfg, dtype, layout)) continue;  // skinny configs: [N, K] weights only
    if (cfg.skinny && m > cfg.tile_m) continue;              // what the heuristic considers them for (decode M)
    auto add = [&](Raster raster, int32_t swizzle, int32_t splits, StreamKMode stream_k) {
      GemmOptions o = base;
      o.config = cfg.name;
      o.split_k = splits;
      o.stream_k = stream_k;
      o.order.raster = raster;
      o.order.swizzle = swizzle;
      variants.push_back(o);
    };
    for (Raster raster : {Raster::kRowMajor, Raster::kColMajor}) {
      for (int32_t swz : {1, 2, 4, 8}) {
        if (cfg.skinny && (raster != Raster::kRowMajor || swz != 1)) continue;
        add(raster, swz, 1, base.stream_k);
      }
    }
    if (cfg.stream_k) {
      for (Raster raster : {Raster::kRowMajor, Raster::kColMajor}) {
        for (int32_t swz : {1, 4}) add(raster, swz, 1, StreamKMode::kOn);
      }
    }
    if (!cfg.split_k) continue;
    const int64_t clusters = split_k_max_clusters(cfg, sm_count);
    for (int32_t splits = 2; splits <= kMaxSplitK; ++splits) {
      if (!split_k_candidate(k, splits, dtype)) continue;
      if (!split_k_within_waves(cfg, m, n, splits, clusters)) break;  // more slices only add items
      add(Raster::kAuto, 0, splits, base.stream_k);
    }
  }
  return variants;
}

}  // namespace flux::bench
