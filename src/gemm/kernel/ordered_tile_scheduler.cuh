// src/gemm/kernel/ordered_tile_scheduler.cuh — extension point (a): the tile order; and stream-K.
//
// A static persistent tile scheduler for CUTLASS 3.x sm90 GemmUniversal kernels (cooperative and
// ping-pong) that visits output tiles in the order given by flux::TileOrderMap (flux/tile_order.h)
// instead of CUTLASS's fixed raster. One "unit" is one cluster's worth of tiles
// (cluster_m x cluster_n); cluster c of the launch takes work items c, c + num_clusters, ...
//
// Split-K (GemmSelection::splits = S > 1) runs the GEMM as a batch of S problems over K/S each
// (L = S, see sm90_gemm_kernel.cuh); work item w is unit w / S of the tile order, split (L) w % S, so
// the S splits of a tile are consecutive and the tile order of the units is kept.
//
// Stream-K (GemmSelection::stream_k, cooperative kernels only: the ping-pong kernel layer always runs the
// whole K): the units of the tile order are split by src/gemm/stream_k.h into whole units first and a
// stream-K region of k-tile ranges; the kernel layer asks for each work item's k range
// (get_work_k_tile_start / _count), calls fixup() after the mainloop and runs the epilogue only where
// compute_epilogue() says so (the piece holding k = 0 of its unit). fixup() is the deterministic
// reduction described in stream_k.h: non-final pieces store their fp32 accumulators into the worker's
// workspace slot and release a flag; the final piece waits (bounded, WaitSite::kGemmStreamKFixup) for
// each later worker's flag, resets it, and adds those partials in worker order. Slots and flags are per
// (worker, CTA of the cluster, math warp group); every flag is zero between calls.
//
// Launch geometry (set by the launcher, sm90_gemm_kernel.cuh): grid = (cluster_m, cluster_n,
// num_clusters) with cluster dims (cluster_m, cluster_n, 1), so blockIdx.z is the cluster index and
// (blockIdx.x, blockIdx.y) the CTA's place inside its cluster.
//
// Swap-AB kernels (kTransposed: the kernel computes C^T, its M over C's N and its N over C's M) take the same
// TileOrderMap, built over C's units like every other kernel's: unit (m, n) of C is the kernel's tile column m,
// tile row n. So a fused op's segments (rows of C) and column bands mean the same under swap-AB, and the hooks'
// flags (M-blocks and tiles of C) are indexed as for the unswapped kernels (hooked_collectives.cuh).
//
// It implements the subset of CUTLASS's scheduler interface the two sm90 TMA warp-specialized
// kernel layers call (no dynamic CLC scheduling).
#pragma once

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass/pipeline/pipeline.hpp"
#include "flux/tile_order.h"
#include "src/device/signal.cuh"
#include "src/device/wait_context.h"
#include "src/gemm/fast_tile_order.h"
#include "src/gemm/stream_k.h"

namespace flux::gemm::kernel {

// kStreamK: the scheduler can run a stream-K decomposition (the cooperative, unswapped, whole-output
// kernels). Without it every stream-K branch compiles out and the per-tile work is a counter step: the
// ping-pong and split-K partial kernels call is_last_tile() after every tile's MMA (CUTLASS's
// programmatic-launch hint, enabled in the partial kernels), where a copy of the scheduler and a
// unit_at() each tile cost the split-K path time on short k slices.
// kTransposed: the swap-AB kernels (see the top of this file).
template <bool kStreamK, bool kTransposed = false>
struct OrderedTileSchedulerTag {};

template <bool kStreamK, bool kTransposed = false>
class OrderedTileScheduler {
  static_assert(!(kStreamK && kTransposed), "stream-K runs in unswapped kernels only");

 public:
  static constexpr bool IsDynamicPersistent = false;

  struct WorkTileInfo {
    int32_t M_idx = 0;
    int32_t N_idx = 0;
    int32_t L_idx = 0;
    bool is_valid_tile = false;
    // Stream-K pieces (whole units: k_count -1, final, no slot, no peers).
    int32_t k_start = 0;      // first k-tile of this item
    int32_t k_count = -1;     // k-tiles of this item; -1: the whole K
    bool final = true;        // holds k = 0 of its unit: runs the epilogue
    int32_t sk_slot = -1;     // non-final: the worker whose slot its partials go to (>= 0)
    int32_t peer_first = 0;   // final: workers whose partials it adds, in this order (none when last < first)
    int32_t peer_last = -1;

    CUTLASS_HOST_DEVICE bool is_valid() const { return is_valid_tile; }
    CUTLASS_HOST_DEVICE static WorkTileInfo invalid_work_tile() {
      WorkTileInfo w;
      w.M_idx = w.N_idx = w.L_idx = -1;
      return w;
    }
    CUTLASS_HOST_DEVICE bool is_final_split(uint32_t) const { return final; }
    CUTLASS_HOST_DEVICE int32_t reduction_subtile_idx() const { return -1; }
  };

  // The stream-K part of the arguments (sk.active() false: every unit whole).
  struct StreamKArgs {
    StreamKShape sk{};
    float* workspace = nullptr;  // sk_workers x cluster CTAs x 2 math groups slots of tile_m x tile_n fp32
    uint32_t* flags = nullptr;   // one per slot, zero between calls
    device::WaitContext ctx{};   // the fixup's bounded wait
  };

  struct Arguments {
    TileOrderMap order{};
    int32_t splits = 1;  // L of the batched problem: split-K factor (1 = whole K)
    StreamKArgs stream_k{};
  };

  struct Params {
    TileOrderMap order{};
    FastUnitMap fast{};  // the per-tile step without 64-bit division, where the order is plain (fast_tile_order.h)
    int32_t cluster_m = 1;
    int32_t cluster_n = 1;
    int32_t splits = 1;
    StreamKArgs stream_k{};
  };

  // Required by the kernel layers' type aliases; no dynamic scheduling pipeline is used.
  using Pipeline = cutlass::PipelineEmpty;
  using ThrottlePipeline = cutlass::PipelineEmpty;
  struct CLCResponse {};
  class SharedStorage {
   public:
    CUTLASS_DEVICE typename Pipeline::SharedStorage pipeline() { return {}; }
    CUTLASS_DEVICE typename ThrottlePipeline::SharedStorage throttle_pipeline() { return {}; }
    CUTLASS_DEVICE CLCResponse* data() { return nullptr; }
  };

  template <class ProblemShapeMNKL, class TileShape, class ClusterShape, class... Rest>
  static Params to_underlying_arguments(ProblemShapeMNKL, TileShape, ClusterShape, cutlass::KernelHardwareInfo const&,
                                        Arguments const& args, Rest...) {
    Params params;
    params.order = args.order;
    params.fast = FastUnitMap::make(args.order, args.splits);
    params.splits = args.splits;
    params.stream_k = args.stream_k;
    params.cluster_m = int32_t(cute::size<0>(ClusterShape{}));
    params.cluster_n = int32_t(cute::size<1>(ClusterShape{}));
    return params;
  }

  template <class ProblemShape, class ElementAccumulator, class... Rest>
  static size_t get_workspace_size(Rest const&...) {
    return 0;
  }

  template <class ProblemShape, class ElementAccumulator, class... Rest>
  static cutlass::Status initialize_workspace(Rest const&...) {
    return cutlass::Status::kSuccess;
  }

  CUTLASS_HOST_DEVICE static bool can_implement(Arguments const& args) {
    const StreamKShape& sk = args.stream_k.sk;
    const bool sk_ok = !sk.active() || (kStreamK && args.splits == 1 && sk.units == args.order.total_units() &&
                                        args.stream_k.workspace != nullptr && args.stream_k.flags != nullptr &&
                                        args.stream_k.ctx.status != nullptr);
    return args.order.swizzle >= 1 && args.splits >= 1 && sk_ok;
  }

  CUTLASS_DEVICE explicit OrderedTileScheduler(Params const& params) : params_(params) {
#if defined(__CUDA_ARCH__)
    linear_ = uint64_t(blockIdx.z);
    stride_ = uint64_t(gridDim.z);
#endif
    if constexpr (kStreamK) {
      const StreamKShape& sk = params_.stream_k.sk;
      if (sk.active()) {
        sk_pos_ = sk.begin(int64_t(linear_));
        sk_end_ = sk.end(int64_t(linear_));
        worker_ = int32_t(linear_);
      }
    }
  }

  CUTLASS_DEVICE uint64_t total_work() const { return uint64_t(params_.order.total_units()) * uint64_t(params_.splits); }

  CUTLASS_DEVICE WorkTileInfo get_current_work() const {
    if constexpr (kStreamK) {
      const StreamKShape& sk = params_.stream_k.sk;
      if (sk.active()) {
        if (linear_ < uint64_t(sk.dp_units)) return unit_work(int64_t(linear_), 0);
        if (sk_pos_ >= sk_end_) return WorkTileInfo::invalid_work_tile();
        const StreamKPiece piece = stream_k_piece(sk, worker_, sk_pos_);
        WorkTileInfo w = unit_work(piece.unit, 0);
        w.k_start = piece.k_start;
        w.k_count = piece.k_count;
        w.final = piece.final;
        w.sk_slot = piece.sk_slot;
        w.peer_first = piece.peer_first;
        w.peer_last = piece.peer_last;
        return w;
      }
    }
    if (linear_ >= total_work()) return WorkTileInfo::invalid_work_tile();
    if (params_.fast.active) {  // fewer than 2^31 items
      const uint32_t item = uint32_t(linear_);
      const uint32_t unit = params_.fast.splits.div(item);
      return unit_work(int64_t(unit), int32_t(item - unit * params_.fast.splits.divisor));
    }
    const uint64_t splits = uint64_t(params_.splits);
    return unit_work(int64_t(linear_ / splits), int32_t(linear_ % splits));
  }

  template <class ClusterShape>
  CUTLASS_DEVICE WorkTileInfo initial_work_tile_info(ClusterShape) const {
    return get_current_work();
  }

  CUTLASS_DEVICE void advance_to_next_work(uint32_t advance_count = 1) {
    if constexpr (kStreamK) {
      const StreamKShape& sk = params_.stream_k.sk;
      if (sk.active()) {
        for (uint32_t i = 0; i < advance_count; ++i) {
          if (linear_ < uint64_t(sk.dp_units)) {
            linear_ += stride_;
          } else if (sk_pos_ < sk_end_) {
            sk_pos_ = stream_k_piece(sk, worker_, sk_pos_).next;
          }
        }
        return;
      }
    }
    linear_ += stride_ * advance_count;
  }

  CUTLASS_DEVICE auto fetch_next_work(WorkTileInfo) {
    advance_to_next_work();
    return cute::make_tuple(get_current_work(), true);
  }

  template <class SchedulerPipeline, class SchedulerPipelineState>
  CUTLASS_DEVICE auto fetch_next_work(WorkTileInfo info, SchedulerPipeline&, SchedulerPipelineState) {
    return fetch_next_work(info);
  }

  CUTLASS_DEVICE bool is_last_tile(WorkTileInfo const&, uint32_t advance_count = 1) const {
    if constexpr (kStreamK) {
      if (params_.stream_k.sk.active()) {
        OrderedTileScheduler next = *this;
        next.advance_to_next_work(advance_count);
        return !next.get_current_work().is_valid();
      }
    }
    return linear_ + stride_ * advance_count >= total_work();
  }

  CUTLASS_HOST_DEVICE static bool valid_warpgroup_in_work_tile(WorkTileInfo const&) { return true; }
  CUTLASS_HOST_DEVICE static bool requires_separate_reduction(Params const&) { return false; }
  CUTLASS_HOST_DEVICE static bool compute_epilogue(WorkTileInfo const& w, Params const&) { return w.final; }
  CUTLASS_HOST_DEVICE static bool compute_epilogue(WorkTileInfo const& w) { return w.final; }

  // The stream-K reduction (see the top of this file), per math warp group (128 threads, each holding its
  // share of the tile's accumulators; slots striped so that a warp's 16-byte accesses are contiguous).
  // Without kStreamK every piece is whole and final: nothing to do.
  template <class FrgTensorC>
  CUTLASS_DEVICE static void fixup(Params const& params, WorkTileInfo const& w, FrgTensorC& accumulators,
                                   uint32_t num_groups, uint32_t group) {
    if constexpr (kStreamK) stream_k_fixup(params, w, accumulators, num_groups, group);
  }

  template <class FrgTensorC>
  CUTLASS_DEVICE static void stream_k_fixup(Params const& params, WorkTileInfo const& w, FrgTensorC& accumulators,
                                            uint32_t num_groups, uint32_t group) {
#if defined(__CUDA_ARCH__)
    const bool stores = w.sk_slot >= 0, adds = w.peer_last >= w.peer_first;
    if (!stores && !adds) return;
    constexpr int kThreads = 128;  // a math warp group
    constexpr int kElems = int(cute::size(FrgTensorC{}));
    static_assert(kElems % 4 == 0, "stream-K fixup moves accumulators as float4");
    constexpr int kVecs = kElems / 4;
    const StreamKArgs& sk = params.stream_k;
    const int t = int(threadIdx.x % kThreads);
    const int64_t ctas = int64_t(params.cluster_m) * params.cluster_n;
    const int64_t cta = int64_t(blockIdx.x) + int64_t(blockIdx.y) * params.cluster_m;
    auto slot = [&](int32_t worker) { return (int64_t(worker) * ctas + cta) * num_groups + group; };
    float* acc = accumulators.data();  // registers (the loops are unrolled): no alignment assumed
    const uint32_t barrier = uint32_t(cutlass::arch::ReservedNamedBarriers::StreamkBarrier0) + group;
    if (stores) {
      float4* ws = reinterpret_cast<float4*>(sk.workspace) + slot(w.sk_slot) * (int64_t(kVecs) * kThreads);
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < kVecs; ++i) {
        __stcg(ws + i * kThreads + t, make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
      }
      cutlass::arch::NamedBarrier::sync(kThreads, static_cast<cutlass::arch::ReservedNamedBarriers>(barrier));
      if (t == 0) {
        __threadfence();
        device::st_release_sys(sk.flags + slot(w.sk_slot), 1u);
      }
      return;
    }
    if (t == 0) {
      for (int32_t p = w.peer_first; p <= w.peer_last; ++p) {
        uint32_t* flag = sk.flags + slot(p);
        // Bounded; a timeout is recorded in ctx.status (inline: no call beside the live accumulators).
        device::wait_flag_geq<true>(flag, 1u, int32_t(slot(p)), sk.ctx);
        *reinterpret_cast<volatile uint32_t*>(flag) = 0u;           // consumed: zero for the next call
      }
    }
    cutlass::arch::NamedBarrier::sync(kThreads, static_cast<cutlass::arch::ReservedNamedBarriers>(barrier));
    for (int32_t p = w.peer_first; p <= w.peer_last; ++p) {
      const float4* ws = reinterpret_cast<const float4*>(sk.workspace) + slot(p) * (int64_t(kVecs) * kThreads);
      // Groups of kGroup loads between compiler fences: the accumulators already fill most of the registers
      // (a 64 x 256 share is 128 per thread), so all kVecs loads in flight at once would not fit.
      constexpr int kGroup = 4;
      static_assert(kVecs % kGroup == 0, "stream-K fixup loads in groups of 4 float4");
      CUTLASS_PRAGMA_UNROLL
      for (int g = 0; g < kVecs; g += kGroup) {
        float4 v[kGroup];
        CUTLASS_PRAGMA_UNROLL
        for (int j = 0; j < kGroup; ++j) v[j] = __ldcg(ws + (g + j) * kThreads + t);
        CUTLASS_PRAGMA_UNROLL
        for (int j = 0; j < kGroup; ++j) {
          acc[4 * (g + j)] += v[j].x;
          acc[4 * (g + j) + 1] += v[j].y;
          acc[4 * (g + j) + 2] += v[j].z;
          acc[4 * (g + j) + 3] += v[j].w;
        }
        asm volatile("" ::: "memory");  // the next group's loads stay after these adds
      }
    }
#endif
  }

  template <class ProblemShapeMNKL, class TileShape>
  CUTLASS_HOST_DEVICE static int get_work_k_tile_count(WorkTileInfo const& w, ProblemShapeMNKL problem_shape,
                                                       TileShape tile_shape) {
    if (w.k_count >= 0) return w.k_count;
    return int(cute::size(cute::ceil_div(cute::get<2>(problem_shape), cute::get<2>(tile_shape))));
  }

  CUTLASS_HOST_DEVICE static uint32_t get_work_k_tile_start(WorkTileInfo const& w) { return uint32_t(w.k_start); }

 private:
  // Unit `index` of the tile order, split (L) `split`, as this CTA's tile.
  CUTLASS_DEVICE WorkTileInfo unit_work(int64_t index, int32_t split) const {
    const UnitCoord unit = params_.fast.active ? params_.fast.unit_at(uint32_t(index)) : params_.order.unit_at(index);
#if defined(__CUDA_ARCH__)
    int32_t cta_m = int32_t(blockIdx.x);
    int32_t cta_n = int32_t(blockIdx.y);
#else
    int32_t cta_m = 0, cta_n = 0;
#endif
    WorkTileInfo w;
    // cluster_m / cluster_n are the kernel's: under swap-AB C's cluster_n / cluster_m.
    w.M_idx = (kTransposed ? unit.n : unit.m) * params_.cluster_m + cta_m;
    w.N_idx = (kTransposed ? unit.m : unit.n) * params_.cluster_n + cta_n;
    w.L_idx = split;
    w.is_valid_tile = true;
    return w;
  }

  Params params_;
  uint64_t linear_ = 0;
  uint64_t stride_ = 1;
  int64_t sk_pos_ = 0;  // stream-K: this worker's next iteration, and the end of its range
  int64_t sk_end_ = 0;
  int32_t worker_ = 0;
};

}  // namespace flux::gemm::kernel

// Route CUTLASS's scheduler selection for our tag to the scheduler above.
namespace cutlass::gemm::kernel::detail {
template <bool kStreamK, bool kTransposed, class ArchTag, class TileShape, class ClusterShape,
          uint32_t SchedulerPipelineStageCount>
struct TileSchedulerSelector<flux::gemm::kernel::OrderedTileSchedulerTag<kStreamK, kTransposed>, ArchTag, TileShape,
                             ClusterShape, SchedulerPipelineStageCount> {
  using Scheduler = flux::gemm::kernel::OrderedTileScheduler<kStreamK, kTransposed>;
};
}  // namespace cutlass::gemm::kernel::detail
