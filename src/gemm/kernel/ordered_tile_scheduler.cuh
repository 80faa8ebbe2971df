// src/gemm/kernel/ordered_tile_scheduler.cuh — extension point (a): the tile order.
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
// Launch geometry (set by the launcher, sm90_gemm_kernel.cuh): grid = (cluster_m, cluster_n,
// num_clusters) with cluster dims (cluster_m, cluster_n, 1), so blockIdx.z is the cluster index and
// (blockIdx.x, blockIdx.y) the CTA's place inside its cluster.
//
// It implements the subset of CUTLASS's scheduler interface the two sm90 TMA warp-specialized
// kernel layers call (no in-kernel stream-K / split-K fixup, no dynamic CLC scheduling).
#pragma once

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"
#include "cutlass/pipeline/pipeline.hpp"
#include "flux/tile_order.h"

namespace flux::gemm::kernel {

struct OrderedTileSchedulerTag {};

class OrderedTileScheduler {
 public:
  static constexpr bool IsDynamicPersistent = false;

  struct WorkTileInfo {
    int32_t M_idx = 0;
    int32_t N_idx = 0;
    int32_t L_idx = 0;
    bool is_valid_tile = false;

    CUTLASS_HOST_DEVICE bool is_valid() const { return is_valid_tile; }
    CUTLASS_HOST_DEVICE static WorkTileInfo invalid_work_tile() { return {-1, -1, -1, false}; }
    CUTLASS_HOST_DEVICE bool is_final_split(uint32_t) const { return true; }
    CUTLASS_HOST_DEVICE int32_t reduction_subtile_idx() const { return -1; }
  };

  struct Arguments {
    TileOrderMap order{};
    int32_t splits = 1;  // L of the batched problem: split-K factor (1 = whole K)
  };

  struct Params {
    TileOrderMap order{};
    int32_t cluster_m = 1;
    int32_t cluster_n = 1;
    int32_t splits = 1;
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
    params.splits = args.splits;
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
    return args.order.swizzle >= 1 && args.splits >= 1;
  }

  CUTLASS_DEVICE explicit OrderedTileScheduler(Params const& params) : params_(params) {
#if defined(__CUDA_ARCH__)
    linear_ = uint64_t(blockIdx.z);
    stride_ = uint64_t(gridDim.z);
#endif
  }

  CUTLASS_DEVICE uint64_t total_work() const { return uint64_t(params_.order.total_units()) * uint64_t(params_.splits); }

  CUTLASS_DEVICE WorkTileInfo get_current_work() const {
    if (linear_ >= total_work()) return WorkTileInfo::invalid_work_tile();
    const uint64_t splits = uint64_t(params_.splits);
    UnitCoord unit = params_.order.unit_at(int64_t(linear_ / splits));
    const int32_t split = int32_t(linear_ % splits);
#if defined(__CUDA_ARCH__)
    int32_t cta_m = int32_t(blockIdx.x);
    int32_t cta_n = int32_t(blockIdx.y);
#else
    int32_t cta_m = 0, cta_n = 0;
#endif
    return {unit.m * params_.cluster_m + cta_m, unit.n * params_.cluster_n + cta_n, split, true};
  }

  template <class ClusterShape>
  CUTLASS_DEVICE WorkTileInfo initial_work_tile_info(ClusterShape) const {
    return get_current_work();
  }

  CUTLASS_DEVICE void advance_to_next_work(uint32_t advance_count = 1) { linear_ += stride_ * advance_count; }

  CUTLASS_DEVICE auto fetch_next_work(WorkTileInfo) {
    advance_to_next_work();
    return cute::make_tuple(get_current_work(), true);
  }

  template <class SchedulerPipeline, class SchedulerPipelineState>
  CUTLASS_DEVICE auto fetch_next_work(WorkTileInfo info, SchedulerPipeline&, SchedulerPipelineState) {
    return fetch_next_work(info);
  }

  CUTLASS_DEVICE bool is_last_tile(WorkTileInfo const&, uint32_t advance_count = 1) const {
    return linear_ + stride_ * advance_count >= total_work();
  }

  CUTLASS_HOST_DEVICE static bool valid_warpgroup_in_work_tile(WorkTileInfo const&) { return true; }
  CUTLASS_HOST_DEVICE static bool requires_separate_reduction(Params const&) { return false; }
  CUTLASS_HOST_DEVICE static bool compute_epilogue(WorkTileInfo const&, Params const&) { return true; }
  CUTLASS_HOST_DEVICE static bool compute_epilogue(WorkTileInfo const&) { return true; }

  template <class FrgTensorC>
  CUTLASS_DEVICE static void fixup(Params const&, WorkTileInfo const&, FrgTensorC&, uint32_t, uint32_t) {}

  template <class ProblemShapeMNKL, class TileShape>
  CUTLASS_HOST_DEVICE static int get_work_k_tile_count(WorkTileInfo const&, ProblemShapeMNKL problem_shape,
                                                       TileShape tile_shape) {
    return int(cute::size(cute::ceil_div(cute::get<2>(problem_shape), cute::get<2>(tile_shape))));
  }

  CUTLASS_HOST_DEVICE static uint32_t get_work_k_tile_start(WorkTileInfo const&) { return 0; }

 private:
  Params params_;
  uint64_t linear_ = 0;
  uint64_t stride_ = 1;
};

}  // namespace flux::gemm::kernel

// Route CUTLASS's scheduler selection for our tag to the scheduler above.
namespace cutlass::gemm::kernel::detail {
template <class ArchTag, class TileShape, class ClusterShape, uint32_t SchedulerPipelineStageCount>
struct TileSchedulerSelector<flux::gemm::kernel::OrderedTileSchedulerTag, ArchTag, TileShape, ClusterShape,
                             SchedulerPipelineStageCount> {
  using Scheduler = flux::gemm::kernel::OrderedTileScheduler;
};
}  // namespace cutlass::gemm::kernel::detail
