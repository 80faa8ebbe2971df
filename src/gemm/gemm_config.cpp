// src/gemm/gemm_config.cpp — the config table and the one heuristic that picks among them.
//
// The heuristic is a pure function of (M, N, K) and the device limits, so CPU tests check it.
// Model: a persistent kernel runs ceil(units / concurrent clusters) waves; each wave costs one CTA
// tile's work divided by the config's measured throughput (kRelativeRate, below). The config with
// the least predicted time wins; ties go to the earlier config. Device limits (SM count, cluster
// occupancy) come from the device.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "flux/gemm.h"
#include "src/common/check.h"
#include "src/gemm/gemm_config.h"

namespace flux {

const std::vector<GemmConfigInfo>& gemm_configs() {
  static const std::vector<GemmConfigInfo> configs = [] {
    std::vector<GemmConfigInfo> out;
    for (const gemm::ConfigShape& s : gemm::kConfigShapes) {
      GemmConfigInfo info;
      info.id = static_cast<int>(s.id);
      info.name = s.name;
      info.tile_m = s.tile_m;
      info.tile_n = s.tile_n;
      info.tile_k = s.tile_k;
      info.cluster_m = s.cluster_m;
      info.cluster_n = s.cluster_n;
      info.pingpong = s.pingpong;
      out.push_back(info);
    }
    return out;
  }();
  return configs;
}

namespace {

// Per-CTA throughput of each config on full waves, relative to 128x256 cooperative. Fitted to a config
// sweep on the H200 (15 per-rank shapes x 2 dtypes x 4 configs x 2 rasters x 4 swizzles, timed side by
// side) and checked on a second one made with this heuristic (bench/results/gemm_sweep_h200_20261201.jsonl):
// there the chosen variant is within 1% of the fastest of the 32 on 24 of 30 (shape, dtype) rows, within
// 2% on 29, worst 3.7%; median 0.6%.
//   128x256x64_coop_c2x1     1.00  reference; the epilogue is exposed (both math groups do it)
//   128x128x64_pingpong_c1x2 1.04  the other math group's MMA hides each tile's epilogue; finer
//                                  tiles also quantize better (it was best or within 0.5% on all 15)
//   256x128x64_coop_c1x2     1.00  same work per tile as 128x256, transposed
//   64x256x64_pingpong_c2x1  1.00  1-2% behind 128x128 ping-pong on the sweep; wins where 64-row
//                                  tiles waste fewer rows (M <= 64)
constexpr double kRelativeRate[gemm::kNumConfigs] = {1.00, 1.04, 1.00, 1.00};

// Tile order of ping-pong configs: row-major bands of 8 unit rows. On the fitting sweep it was the best
// order of 128x128 ping-pong on average (0.6% from each shape's best, worst 1.6%); column-major bands
// lost up to 8% at M = 8192 with a large B, plain row-major (bands of 1) up to 44%.
constexpr int32_t kPingpongSwizzle = 8;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int32_t pow2_at_most(int64_t limit, int32_t cap) {
  int32_t s = 1;
  while (s * 2 <= cap && s * 2 <= limit) s *= 2;
  return s;
}

}  // namespace

GemmSelection select_gemm_config(int64_t m, int64_t n, int64_t k, const DeviceLimits& limits,
                                 const std::vector<int>& max_active_clusters) {
  FLUX_CHECK_ARG(m >= 1 && n >= 1 && k >= 1, "flux gemm: select_gemm_config needs m, n, k >= 1 (got m=", m,
                 " n=", n, " k=", k, ")");
  FLUX_CHECK_ARG(limits.sm_count > 0, "flux gemm: device limits have sm_count ", limits.sm_count,
                 " (expected the device's multiprocessor count)");
  const auto& configs = gemm_configs();
  int best = -1;
  double best_time = 0.0;
  int64_t best_waves = 0, best_units = 0, best_concurrent = 0;
  for (const GemmConfigInfo& c : configs) {
    int64_t tiles_m = ceil_div(m, c.tile_m), tiles_n = ceil_div(n, c.tile_n);
    int64_t units = ceil_div(tiles_m, c.cluster_m) * ceil_div(tiles_n, c.cluster_n);
    int64_t concurrent = limits.sm_count / (c.cluster_m * c.cluster_n);
    if (static_cast<size_t>(c.id) < max_active_clusters.size() && max_active_clusters[c.id] > 0) {
      concurrent = max_active_clusters[c.id];
    }
    int64_t waves = ceil_div(units, std::max<int64_t>(concurrent, 1));
    double tile_work = double(c.tile_m) * c.tile_n;  // per CTA; K is common to all configs
    double time = double(waves) * tile_work / kRelativeRate[c.id];
    if (best < 0 || time < best_time * (1.0 - 1e-9)) {
      best = c.id;
      best_time = time;
      best_waves = waves;
      best_units = units;
      best_concurrent = concurrent;
    }
  }
  const GemmConfigInfo& c = configs[best];
  GemmSelection sel;
  sel.config = c;
  sel.tiles_m = ceil_div(m, c.tile_m);
  sel.tiles_n = ceil_div(n, c.tile_n);
  int64_t units_m = ceil_div(sel.tiles_m, c.cluster_m), units_n = ceil_div(sel.tiles_n, c.cluster_n);
  if (c.pingpong) {
    sel.raster = Raster::kRowMajor;
    sel.swizzle = pow2_at_most(units_m, kPingpongSwizzle);
  } else {
    // Cooperative: walk the shorter dimension fastest (M fastest when there are more unit columns than
    // rows: A's rows stay hot in L2 while B streams through), in bands of about sqrt(concurrent
    // clusters) lines so the clusters in flight cover a near-square block of C.
    sel.raster = units_n >= units_m ? Raster::kColMajor : Raster::kRowMajor;
    int64_t minor = sel.raster == Raster::kColMajor ? units_n : units_m;
    int32_t swizzle = 1;
    while (swizzle * 2 <= 8 && int64_t(swizzle) * 2 * swizzle * 2 <= best_concurrent && swizzle * 2 <= minor) {
      swizzle *= 2;
    }
    sel.swizzle = swizzle;
  }
  sel.reason = detail::cat("heuristic: ", c.name, " predicted fastest (waves x tile work / measured rate): ",
                           best_units, " units in ", best_waves, " waves of ", best_concurrent, " clusters; raster ",
                           sel.raster == Raster::kColMajor ? "col" : "row", " (", units_m, "x", units_n,
                           " units), swizzle ", sel.swizzle);
  return sel;
}

}  // namespace flux
