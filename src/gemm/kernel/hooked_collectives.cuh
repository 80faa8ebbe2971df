// src/gemm/kernel/hooked_collectives.cuh — extension points (b) and (c) as thin wrappers around
// CUTLASS's sm90 collectives. Each wrapper adds one field to the collective's Arguments/Params and
// overrides one member; everything else (TMA descriptors, pipelines, WGMMA, epilogue fusion) is
// CUTLASS's own. With the hook's pointer null the added work is one predicated branch per tile.
//
//   WaitBeforeLoad<Mainloop>: before the producer warp issues the TMA loads of an output tile, one
//     lane waits (acquire, system scope, bounded) until flags[m_block] has reached value, then every
//     lane of the producer warp fences the async proxy so the TMA reads see the data the flag guards.
//   PublishAfterStore<Epilogue, kSwap, Deferred>: once a tile's TMA stores have completed their global
//     writes, the issuing warp fences the async proxy and lane 0 releases the tile's flag (store `value`)
//     or bumps its M-block counter (add 1), at system scope.
//     kDeferred = false (ping-pong: CUTLASS calls store_tail after every tile, so the end of a CTA's last
//       tile cannot be told apart): the warp waits for this tile's stores right after issuing them.
//     kDeferred = true (cooperative: store_tail runs once, after the CTA's last tile): a tile is published
//       one tile late, when the next tile's stores have been issued. Waiting then for every bulk group but
//       that tile's kGroupsPerTile (one per epilogue subtile) finds the earlier tile's writes long done, so
//       the wait costs nothing instead of a store round trip per tile on the critical path; store_tail
//       waits for all and publishes the CTA's last tile. A flag is thus released at the latest when the
//       same CTA's next tile is stored or the kernel ends; publish.eager (GemmPublish::eager, for a launch
//       whose waits depend on its own flags through another agent) publishes each tile at once instead.
// kSwap (the swap-AB kernels, which compute C^T): the kernel's tile (m, n) is C's tile (n, m), so the wait reads
// the kernel's tile column as C's M-block and the publish transposes the tile index: the flags mean what they
// mean for every other kernel.
// `value` comes from the kernel arguments, or (value_ptr set) from a device word read when the wait or
// publish happens: per-call values that advance on the device, so a CUDA graph replay uses the value
// of its own call rather than the one baked in at capture.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "src/device/signal.cuh"
#include "src/gemm/kernel/hook_params.h"

namespace flux::gemm::kernel {

template <class Base, bool kSwap = false>
struct WaitBeforeLoad : Base {
  struct Arguments : Base::Arguments {
    WaitHookParams wait{};
  };
  struct Params : Base::Params {
    WaitHookParams wait{};
  };

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_shape, Arguments const& args, void* workspace) {
    Params params;
    static_cast<typename Base::Params&>(params) =
        Base::to_underlying_arguments(problem_shape, static_cast<typename Base::Arguments const&>(args), workspace);
    params.wait = args.wait;
    return params;
  }

  template <class TensorA, class TensorB, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(Params const& params, typename Base::MainloopPipeline pipeline,
                           typename Base::PipelineState smem_pipe_write,
                           cute::tuple<TensorA, TensorB> const& load_inputs, BlockCoord const& blk_coord,
                           KTileIterator k_tile_iter, int k_tile_count, int thread_idx,
                           uint32_t block_rank_in_cluster, typename Base::TensorStorage& shared_tensors) {
    if (params.wait.flags != nullptr) {
      const int32_t m_block = int32_t(cute::get<kSwap ? 1 : 0>(blk_coord));  // C's M-block
      if (m_block < params.wait.tiles_m) {
        if (cute::elect_one_sync()) {
          device::chaos_delay(params.wait.ctx.chaos_seed, uint32_t(m_block) * 31u + 1u);
          const uint32_t value = params.wait.value_ptr != nullptr ? *params.wait.value_ptr : params.wait.value;
          device::wait_flag_geq(params.wait.flags + m_block, value, m_block, params.wait.ctx);
        }
        __syncwarp();
        device::fence_proxy_async_global();
      }
    }
    Base::load(params, pipeline, smem_pipe_write, load_inputs, blk_coord, k_tile_iter, k_tile_count, thread_idx,
               block_rank_in_cluster, shared_tensors);
  }
};

// Deferred: std::true_type or std::false_type (a type, not a bool: nvcc's host stub for the kernel spelled a bool
// argument computed from the config as false where the compiler had true, and the build failed).
template <class Base, bool kSwap = false, class Deferred = std::false_type>
struct PublishAfterStore : Base {
  static constexpr bool kDeferred = Deferred::value;
  struct Arguments : Base::Arguments {
    PublishHookParams publish{};
  };
  struct Params : Base::Params {
    PublishHookParams publish{};
  };

  // Bulk groups one tile commits: CUTLASS's epilogue commits one per subtile when store() is given subtile_idx
  // -1, the only form OrderedTileScheduler produces (its reduction_subtile_idx() is -1).
  static constexpr int kGroupsPerTile =
      int(cute::size<0>(typename Base::CtaTileMNK{}) / cute::size<0>(cute::shape(typename Base::EpilogueTile{}))) *
      int(cute::size<1>(typename Base::CtaTileMNK{}) / cute::size<1>(cute::shape(typename Base::EpilogueTile{})));
  static_assert(kGroupsPerTile >= 1 && kGroupsPerTile <= 63, "a tile's bulk-group count: cp.async.bulk.wait_group takes 0..63");

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_shape, Arguments const& args, void* workspace) {
    Params params;
    static_cast<typename Base::Params&>(params) =
        Base::to_underlying_arguments(problem_shape, static_cast<typename Base::Arguments const&>(args), workspace);
    params.publish = args.publish;
    return params;
  }

  CUTLASS_HOST_DEVICE PublishAfterStore(Params const& params, typename Base::TensorStorage& shared_tensors)
      : Base(params, shared_tensors), publish_(params.publish) {}

  template <class ProblemShapeMNKL, class TileShapeMNK, class TileCoordMNKL, class AccEngine, class AccLayout,
            class TiledMma>
  CUTLASS_DEVICE auto store(typename Base::LoadPipeline load_pipeline,
                            typename Base::LoadPipelineState load_pipe_consumer_state,
                            typename Base::StorePipeline store_pipeline,
                            typename Base::StorePipelineState store_pipe_producer_state,
                            ProblemShapeMNKL problem_shape_mnkl, TileShapeMNK tile_shape_MNK,
                            TileCoordMNKL tile_coord_mnkl, cute::Tensor<AccEngine, AccLayout> accumulators,
                            TiledMma tiled_mma, int thread_idx, typename Base::TensorStorage& shared_tensors,
                            int subtile_idx = -1) {
    auto next_states = Base::store(load_pipeline, load_pipe_consumer_state, store_pipeline, store_pipe_producer_state,
                                   problem_shape_mnkl, tile_shape_MNK, tile_coord_mnkl, accumulators, tiled_mma,
                                   thread_idx, shared_tensors, subtile_idx);
    if (publish_.mode != kPublishNone) {
      // C's tile (m_block, n_block).
      const int32_t m_block = int32_t(cute::get<kSwap ? 1 : 0>(tile_coord_mnkl));
      const int32_t n_block = int32_t(cute::get<kSwap ? 0 : 1>(tile_coord_mnkl));
      if (kDeferred && !publish_.eager) {
        publish_tile<kGroupsPerTile>(pending_m_, pending_n_, thread_idx);  // the previous tile, if any
        pending_m_ = m_block;
        pending_n_ = n_block;
        pending_thread_idx_ = thread_idx;
      } else {
        publish_tile<0>(m_block, n_block, thread_idx);
      }
    }
    return next_states;
  }

  CUTLASS_DEVICE auto store_tail(typename Base::LoadPipeline load_pipeline,
                                 typename Base::LoadPipelineState load_pipe_consumer_state,
                                 typename Base::StorePipeline store_pipeline,
                                 typename Base::StorePipelineState store_pipe_producer_state) {
    auto next_states = Base::store_tail(load_pipeline, load_pipe_consumer_state, store_pipeline,
                                        store_pipe_producer_state);
    if constexpr (kDeferred) {
      if (publish_.mode != kPublishNone) {
        publish_tile<0>(pending_m_, pending_n_, pending_thread_idx_);
        pending_m_ = -1;
      }
    }
    return next_states;
  }

 private:
  // Called by every epilogue thread; the TMA stores were committed by the epilogue's warp 0. Publishes tile
  // (m_block, n_block) once at most kPending bulk groups (the latest, another tile's) are still writing.
  // m_block < 0: nothing to publish.
  template <int kPending>
  CUTLASS_DEVICE void publish_tile(int32_t m_block, int32_t n_block, int thread_idx) const {
    if (thread_idx / 32 != 0) return;
    if (m_block < 0 || m_block >= publish_.tiles_m || n_block >= publish_.tiles_n) return;
    device::bulk_store_wait<kPending>();
    device::fence_proxy_async_global();
    __syncwarp();
    if ((thread_idx & 31) == 0) {
      device::chaos_delay(publish_.chaos_seed, uint32_t(m_block * 7919 + n_block));
      if (publish_.mode == kPublishTileFlag) {
        const uint32_t value = publish_.value_ptr != nullptr ? *publish_.value_ptr : publish_.value;
        device::st_release_sys(publish_.flags + int64_t(m_block) * publish_.tiles_n + n_block, value);
      } else {
        device::red_add_release_sys(publish_.flags + m_block, 1u);
      }
    }
  }

  PublishHookParams publish_;
  int32_t pending_m_ = -1;  // kDeferred: the tile stored but not yet published (-1: none)
  int32_t pending_n_ = -1;
  int pending_thread_idx_ = 0;  // the epilogue thread index store() was given (store_tail is not given one)
};

}  // namespace flux::gemm::kernel
