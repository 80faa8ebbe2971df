// src/gemm/gemm_config.cpp — the config table and the one heuristic that picks among them.
//
// The heuristic is a pure function of (M, N, K) and the device limits, so CPU tests check it.
// Model: a persistent kernel runs ceil(units / concurrent clusters) waves; each wave costs one
// unit's work divided by the config's per-SM throughput (kRelativeRate, measured: see below). The
// config with the least predicted time wins; ties go to the earlier (larger-tile) config.
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

// Per-SM throughput of each config on full tiles, relative to 128x256 cooperative, from the config
// sweep on the H200 (bench/results/gemm_sweep_h200.jsonl; update both together):
//   128x256x64_coop_c2x1     1.00  reference: 64x256 per math warp group, B multicast over 2 CTAs
//   128x128x64_pingpong_c1x2 0.93  half the tile: more B/A traffic per flop, epilogue hidden by ping-pong
//   256x128x64_coop_c1x2     1.00  same work per tile as 128x256, transposed
//   64x256x64_pingpong_c2x1  0.80  64-row tiles: one wgmma M=64 per group, most operand traffic per flop
constexpr double kRelativeRate[gemm::kNumConfigs] = {1.00, 0.93, 1.00, 0.80};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

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
    double unit_work = double(c.tile_m) * c.tile_n * c.cluster_m * c.cluster_n;
    double time = double(waves) * unit_work / kRelativeRate[c.id];
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
  // Raster: walk the shorter dimension fastest, so the clusters running at once share the operand of
  // the longer one (M fastest when there are more unit columns than rows: all of A's rows stay hot in
  // L2 while B streams through once).
  sel.raster = units_n >= units_m ? Raster::kColMajor : Raster::kRowMajor;
  // Swizzle: bands of `s` unit lines, with s about sqrt(concurrent clusters) so that the clusters in
  // flight cover a near-square block of C (least A + B traffic per wave), bounded by the minor extent.
  int64_t minor = sel.raster == Raster::kColMajor ? units_n : units_m;
  int32_t swizzle = 1;
  while (swizzle * 2 <= 8 && int64_t(swizzle) * 2 * swizzle * 2 <= best_concurrent && swizzle * 2 <= minor) {
    swizzle *= 2;
  }
  sel.swizzle = swizzle;
  sel.reason = detail::cat("heuristic: ", c.name, " predicted fewest (waves x unit work / rate): ", best_units,
                           " units in ", best_waves, " waves of ", best_concurrent, " clusters; raster ",
                           sel.raster == Raster::kColMajor ? "col" : "row", " (", units_m, "x", units_n,
                           " units), swizzle ", swizzle);
  return sel;
}

}  // namespace flux
