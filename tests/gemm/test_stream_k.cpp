// tests/gemm/test_stream_k.cpp — the stream-K decomposition (src/gemm/stream_k.h), walked on the host the way
// OrderedTileScheduler walks it on the device: every unit's k-tiles computed exactly once, one final piece per
// unit (k = 0) that adds exactly the unit's other pieces, each worker's only non-final piece its first, waits
// only towards later workers (no cycle), work balanced to one k-tile; and the heuristic's use of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "flux/gemm.h"
#include "src/gemm/stream_k.h"
#include "tests/support/cpu_support.h"

namespace {

using flux::gemm::StreamKPiece;
using flux::gemm::StreamKShape;

// Walks every worker's work as the device scheduler does and checks the invariants; returns the pieces.
void check_shape(int64_t units, int64_t workers, int64_t k_tiles) {
  const StreamKShape s = flux::gemm::stream_k_shape(units, workers, k_tiles, true);
  const std::string where = "units " + std::to_string(units) + " workers " + std::to_string(workers) + " k_tiles " +
                            std::to_string(k_tiles);
  if (!s.active()) {
    EXPECT_EQ(s.dp_units, units) << where;
    // Inactive only where whole waves fill the grid, or there is too little to cut.
    EXPECT_TRUE(units % workers == 0 || workers <= 1 || k_tiles <= 1 ||
                (units - (units / workers >= 2 ? (units / workers - 1) * workers : 0)) * k_tiles < 2 * workers)
        << where;
    return;
  }
  ASSERT_EQ(s.dp_units % workers, 0) << where;
  ASSERT_GE(s.sk_units, 1) << where;
  ASSERT_EQ(s.dp_units + s.sk_units, units) << where;
  if (units >= 2 * workers) {
    EXPECT_GE(s.sk_units, workers) << where;
    EXPECT_LT(s.sk_units, 2 * workers) << where;
  }
  ASSERT_EQ(s.sk_workers, workers) << where;
  std::map<int64_t, std::vector<int64_t>> covered;  // stream-K unit -> k-tile counts
  std::map<int64_t, int> finals;
  std::map<int64_t, std::set<int64_t>> added;       // unit -> workers whose partials its final piece adds
  std::map<int64_t, std::set<int64_t>> stored;      // unit -> workers that stored partials of it
  int64_t min_work = INT64_MAX, max_work = 0;
  for (int64_t w = 0; w < workers; ++w) {
    ASSERT_EQ(s.begin(w), w * s.iterations() / workers) << where;
    ASSERT_GE(s.end(w) - s.begin(w), 2) << where << " worker " << w;
    for (int64_t g = s.begin(w); g < s.end(w); ++g) ASSERT_EQ(s.worker_of(g), w) << where << " iteration " << g;
    int64_t work = (s.dp_units / workers) * k_tiles;
    int pieces = 0, non_final = 0;
    for (int64_t pos = s.begin(w); pos < s.end(w);) {
      const StreamKPiece p = flux::gemm::stream_k_piece(s, w, pos);
      ASSERT_GT(p.k_count, 0) << where;
      ASSERT_GT(p.next, pos) << where;
      ASSERT_GE(p.unit, s.dp_units) << where;
      ASSERT_LT(p.unit, units) << where;
      auto& k = covered[p.unit];
      if (k.empty()) k.assign(size_t(k_tiles), 0);
      for (int32_t i = p.k_start; i < p.k_start + p.k_count; ++i) ++k[size_t(i)];
      if (p.final) {
        ++finals[p.unit];
        EXPECT_EQ(p.sk_slot, -1) << where;
        for (int32_t q = p.peer_first; q <= p.peer_last; ++q) {
          EXPECT_GT(q, w) << where << ": a final piece waits only for later workers";
          added[p.unit].insert(q);
        }
      } else {
        ++non_final;
        EXPECT_EQ(pieces, 0) << where << ": a worker's non-final piece is its first";
        EXPECT_EQ(p.sk_slot, w) << where;
        stored[p.unit].insert(w);
        EXPECT_GT(p.peer_first, p.peer_last) << where;
      }
      work += p.k_count;
      ++pieces;
      pos = p.next;
    }
    EXPECT_LE(non_final, 1) << where;
    min_work = std::min(min_work, work);
    max_work = std::max(max_work, work);
  }
  EXPECT_LE(max_work - min_work, 1) << where << ": balanced to one k-tile";
  ASSERT_EQ(int64_t(covered.size()), s.sk_units) << where;
  for (const auto& [unit, k] : covered) {
    for (int64_t i = 0; i < k_tiles; ++i) ASSERT_EQ(k[size_t(i)], 1) << where << " unit " << unit << " k-tile " << i;
    EXPECT_EQ(finals[unit], 1) << where << " unit " << unit;
    EXPECT_EQ(added[unit], stored[unit]) << where << " unit " << unit << ": the final piece adds exactly the others";
  }
}

TEST(StreamK, DecompositionCoversEveryKTileOnceAndWaitsForward) {
  // The shapes that matter (a suite shape: 144 tiles of 128x128 on 132 SMs; 36 units of 256x128 c1x2 on 66
  // clusters) and a random sweep.
  check_shape(144, 132, 64);
  check_shape(36, 66, 64);
  check_shape(80, 66, 56);
  check_shape(288, 132, 56);
  check_shape(1, 66, 1000);
  check_shape(131, 132, 2);
  std::mt19937_64 rng(0x5eed);
  for (int i = 0; i < 3000; ++i) {
    const int64_t workers = 1 + int64_t(rng() % 140);
    const int64_t units = 1 + int64_t(rng() % 600);
    const int64_t k_tiles = 1 + int64_t(rng() % 200);
    check_shape(units, workers, k_tiles);
    if (HasFatalFailure()) return;
  }
}

TEST(StreamK, InactiveOnWholeWavesAndWhenOff) {
  EXPECT_FALSE(flux::gemm::stream_k_shape(264, 132, 64, true).active());  // two whole waves
  EXPECT_FALSE(flux::gemm::stream_k_shape(144, 132, 64, false).active());  // not asked for
  EXPECT_FALSE(flux::gemm::stream_k_shape(10, 132, 8, true).active());     // 80 k-tiles for 132 workers
  const StreamKShape s = flux::gemm::stream_k_shape(400, 132, 64, true);   // 3.03 waves
  EXPECT_TRUE(s.active());
  EXPECT_EQ(s.dp_units, 2 * 132);
  EXPECT_EQ(s.sk_units, 400 - 264);
}

using flux::testing::h200_limits;

TEST(StreamK, TheHeuristicUsesItOnAPartialLastWaveOnly) {
  const flux::DeviceLimits limits = h200_limits();
  // 128 x 18432 x 12288: 72 units of 128x128 c1x2 on 66 clusters, a second wave of 6 units whole-tile; its k range
  // is long (192 k-tiles), so the model cuts the last units into k ranges (measured 1.2-1.3x faster than whole
  // tiles on the H200, session 12). (512 x 4608 x 4096, this test's shape until 2026-12-03, is one whole wave of
  // 128x192 c2x1 units now.)
  const flux::GemmSelection s = flux::select_gemm_config(128, 18432, 12288, limits);
  EXPECT_TRUE(s.stream_k) << s.reason;
  EXPECT_TRUE(s.config.stream_k) << s.reason;
  EXPECT_EQ(s.splits, 1) << s.reason;
  EXPECT_NE(s.reason.find("stream-K"), std::string::npos) << s.reason;
  // Off: never.
  const flux::GemmSelection off =
      flux::select_gemm_config(128, 18432, 12288, limits, {}, 0, true, flux::DType::kBF16, flux::StreamKMode::kOff);
  EXPECT_FALSE(off.stream_k) << off.reason;
  // Whole waves (8192 x 8192: 64 x 32 = 2048 units of 128x256 c2x1 on 66 clusters is not whole, but the
  // whole-tile ping-pong config already quantizes 4096 tiles on 132 SMs to 31.03 waves): no stream-K needed
  // where the last wave is a small share of the work.
  const flux::GemmSelection big = flux::select_gemm_config(8192, 8192, 8192, limits);
  EXPECT_FALSE(big.stream_k) << big.reason;
  // Only configs that can.
  for (int64_t m : {1, 64, 300, 1000, 3000, 5000}) {
    for (int64_t n : {1024, 2560, 4608, 7168}) {
      const flux::GemmSelection x = flux::select_gemm_config(m, n, 4096, limits);
      if (x.stream_k) {
        EXPECT_TRUE(x.config.stream_k) << x.reason;
        EXPECT_EQ(x.splits, 1) << x.reason;
      }
    }
  }
}

TEST(StreamK, ForcedOnAppliesToTheConfigsCompiledWithIt) {
  const flux::DeviceLimits limits = h200_limits();
  // Only 128x128x64 cooperative c1x2 is compiled with the stream-K scheduler (in the others it spilled
  // registers, gemm_config.h); a stream-K config is always a cooperative one.
  for (const flux::GemmConfigInfo& c : flux::gemm_configs()) {
    EXPECT_EQ(c.stream_k, std::string(c.name) == "128x128x64_coop_c1x2") << c.name;
    if (c.stream_k) {
      EXPECT_TRUE(!c.pingpong && !c.skinny && !c.swap_ab) << c.name;
    }
  }
  const flux::GemmSelection on =
      flux::select_gemm_config(3000, 5120, 7168, limits, {}, 0, true, flux::DType::kBF16, flux::StreamKMode::kOn);
  if (on.config.stream_k) {
    EXPECT_TRUE(on.stream_k) << on.reason;
  }
  // The workspace a stream-K selection needs: one fp32 tile per CTA, two flags per CTA.
  flux::GemmSelection sel = flux::select_gemm_config(128, 18432, 12288, limits);
  ASSERT_TRUE(sel.stream_k) << sel.reason;
  const flux::StreamKNeeds needs = flux::stream_k_needs(sel, 128, 18432, 12288, 66);
  const int64_t ctas = 66 * sel.config.cluster_m * sel.config.cluster_n;
  EXPECT_EQ(needs.workers, 66);
  EXPECT_EQ(needs.bytes, ctas * sel.config.tile_m * sel.config.tile_n * 4);
  EXPECT_EQ(needs.flags, ctas * 2);
  EXPECT_LE(needs.bytes, flux::split_k_workspace_bound(limits));
  sel.stream_k = false;
  EXPECT_EQ(flux::stream_k_needs(sel, 128, 18432, 12288, 66).bytes, 0);
}

TEST(StreamK, SelectionValidationRefusesStreamKWhereItCannotRun) {
  const flux::DeviceLimits limits = h200_limits();
  const flux::GemmDesc desc{18432, 12288, flux::DType::kBF16, flux::WeightLayout::kNK};
  flux::GemmSelection sel = flux::select_gemm_config(128, 18432, 12288, limits);
  ASSERT_TRUE(sel.stream_k) << sel.reason;
  EXPECT_NO_THROW(flux::validate_gemm_selection(desc, 128, sel));
  // A ping-pong selection (only the ping-pong configs have kernels here) marked stream-K: refused.
  flux::GemmSelection pingpong =
      flux::select_gemm_config(128, 18432, 12288, limits, flux::testing::only_pingpong_clusters());
  ASSERT_FALSE(pingpong.config.stream_k) << pingpong.reason;
  pingpong.stream_k = true;
  EXPECT_THROW(flux::validate_gemm_selection(desc, 128, pingpong), flux::InvalidArgument);
}

}  // namespace
