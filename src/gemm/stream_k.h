// src/gemm/stream_k.h — the stream-K decomposition of the cooperative GEMM kernels (issue 9: the last wave).
//
// Host and device, no CUDA dependency: the heuristic predicts with it (gemm_config.cpp), the plan sizes the
// workspace with it (gemm.cpp), the tile scheduler runs it (kernel/ordered_tile_scheduler.cuh), and CPU tests
// enumerate it (tests/gemm/test_stream_k.cpp).
//
// A persistent grid of W workers (clusters) runs U units (one cluster's tiles each) of T k-tiles. With U a
// multiple of W every worker runs U / W whole units ("data-parallel", DP). Otherwise the last wave is
// partly idle (U = 1.09 W costs 2 waves); stream-K cuts the last units into k-tile ranges instead:
//   dp_units = (floor(U / W) - 1) W whole units first (worker w: units w, w + W, ...), none when U < 2W;
//   the sk_units = U - dp_units remaining units (between W and 2W of them, or all U when U < 2W) form one
//   range of sk_units x T k-tile iterations (unit-major, k fastest), cut into sk_workers near-equal
//   contiguous ranges, worker w's [begin(w), end(w)), begin(w) = floor(w I / sk_workers).
// So every worker runs dp_units / W whole units plus I / sk_workers iterations: balanced to one k-tile.
// Keeping W..2W units in the stream-K region (rather than only the U mod W left over) keeps each unit's
// pieces few (1-3), so the fixup reads few partials.
//
// A worker's range crosses units: its first piece may start inside a unit (at k > 0), its later pieces start at
// a unit's k = 0. The fixup, deterministic:
//   - the piece holding a unit's k = 0 is its *final* piece (it runs the epilogue); every other piece of that
//     unit is the first piece of a later worker (w + 1, w + 2, ...), started at k > 0: "non-final";
//   - a non-final piece stores its fp32 accumulators into its worker's workspace slot (a worker has at most
//     one non-final piece: its first) and releases its flag;
//   - the final piece waits for the flags of workers w + 1 .. peer_last (a bounded wait), then adds their
//     partials to its own accumulators in that order: the same sum order on every run, so results are
//     bitwise reproducible for a given grid.
// Waits point from a worker's last piece to later workers' first pieces, which never wait: no cycle. Every
// worker must be resident (a persistent grid no larger than what fits, as the plan launches).
#pragma once

#include <cstdint>

#include "flux/tile_order.h"  // FLUX_HOST_DEVICE

namespace flux::gemm {

struct StreamKShape {
  int64_t units = 0;       // all units
  int64_t workers = 0;     // the persistent grid (clusters)
  int64_t k_tiles = 0;     // k-tiles of one unit (the whole K)
  int64_t dp_units = 0;    // whole units first
  int64_t sk_units = 0;    // units cut into k ranges (0: no stream-K, every unit whole)
  int64_t sk_workers = 0;  // workers with a stream-K range: all of them (each has >= 2 k-tiles), or 0

  FLUX_HOST_DEVICE bool active() const { return sk_units > 0; }
  FLUX_HOST_DEVICE int64_t iterations() const { return sk_units * k_tiles; }
  // Worker w's stream-K iterations [begin(w), end(w)); empty for w >= sk_workers.
  FLUX_HOST_DEVICE int64_t begin(int64_t w) const {
    if (w >= sk_workers) return iterations();
    return w * iterations() / sk_workers;
  }
  FLUX_HOST_DEVICE int64_t end(int64_t w) const { return begin(w + 1); }
  // The worker whose range holds iteration g (0 <= g < iterations()): the largest w with begin(w) <= g.
  FLUX_HOST_DEVICE int64_t worker_of(int64_t g) const { return ((g + 1) * sk_workers + iterations() - 1) / iterations() - 1; }
  // Pieces of stream-K unit u (0-based within the region): the workers covering its iterations.
  FLUX_HOST_DEVICE int64_t first_worker(int64_t u) const { return worker_of(u * k_tiles); }
  FLUX_HOST_DEVICE int64_t last_worker(int64_t u) const { return worker_of((u + 1) * k_tiles - 1); }
};

// One piece of a worker's stream-K range: the piece starting at iteration `pos` of worker `worker`'s range
// (begin(worker) <= pos < end(worker)); the next piece starts at `next`.
struct StreamKPiece {
  int64_t unit = 0;        // index in the tile order (dp_units + the stream-K unit)
  int32_t k_start = 0;     // first k-tile
  int32_t k_count = 0;     // k-tiles
  bool final = false;      // holds k = 0: adds the later pieces' partials and runs the epilogue
  int32_t sk_slot = -1;    // non-final: stores its partials into this worker's slot
  int32_t peer_first = 0;  // final: the workers whose partials it adds, in this order (none when last < first)
  int32_t peer_last = -1;
  int64_t next = 0;
};

FLUX_HOST_DEVICE StreamKPiece stream_k_piece(const StreamKShape& s, int64_t worker, int64_t pos) {
  StreamKPiece p;
  const int64_t u = pos / s.k_tiles;
  const int64_t unit_begin = u * s.k_tiles, unit_end = unit_begin + s.k_tiles;
  const int64_t range_end = s.end(worker);
  const int64_t piece_end = range_end < unit_end ? range_end : unit_end;
  p.unit = s.dp_units + u;
  p.k_start = int32_t(pos - unit_begin);
  p.k_count = int32_t(piece_end - pos);
  p.final = p.k_start == 0;
  if (!p.final) {
    p.sk_slot = int32_t(worker);  // a piece starting inside its unit is its worker's first (its only such piece)
  } else if (piece_end < unit_end) {
    p.peer_first = int32_t(worker + 1);
    p.peer_last = int32_t(s.worker_of(unit_end - 1));
  }
  p.next = piece_end;
  return p;
}

// The decomposition for `units` units of `k_tiles` k-tiles on `workers` workers, or an inactive shape (every
// unit whole) when the units fill whole waves or stream-K is not asked for.
FLUX_HOST_DEVICE StreamKShape stream_k_shape(int64_t units, int64_t workers, int64_t k_tiles, bool enabled) {
  StreamKShape s;
  s.units = units;
  s.workers = workers;
  s.k_tiles = k_tiles;
  s.dp_units = units;
  if (!enabled || units <= 0 || workers <= 1 || k_tiles <= 1 || units % workers == 0) return s;
  const int64_t waves = units / workers;
  s.dp_units = waves >= 2 ? (waves - 1) * workers : 0;
  const int64_t sk_units = units - s.dp_units;
  // At least two k-tiles per worker (fewer: the fixup would cost more than the wave it saves), so every
  // worker of the grid has a range: the grid is `workers` clusters.
  if (sk_units * k_tiles < 2 * workers) {
    s.dp_units = units;
    return s;
  }
  s.sk_units = sk_units;
  s.sk_workers = workers;
  return s;
}

}  // namespace flux::gemm
