// src/gemm/kernel/hooked_collectives.cuh — extension points (b) and (c) as thin wrappers around
// CUTLASS's sm90 collectives. Each wrapper adds one field to the collective's Arguments/Params and
// overrides one member; everything else (TMA descriptors, pipelines, WGMMA, epilogue fusion) is
// CUTLASS's own. With the hook's pointer null the added work is one predicated branch per tile.
//
//   WaitBeforeLoad<Mainloop>: before the producer warp issues the TMA loads of an output tile, one
//     lane waits (acquire, system scope, bounded) until flags[m_block] has reached value, then every
//     lane of the producer warp fences the async proxy so the TMA reads see the data the flag guards.
//   PublishAfterStore<Epilogue>: after the epilogue has issued a tile's TMA stores, the issuing warp
//     waits for their global writes to complete, fences the async proxy, and lane 0 releases the
//     tile's flag (store `value`) or bumps its M-block counter (add 1), at system scope.
// kSwap (the swap-AB kernels, which compute C^T): the kernel's tile (m, n) is C's tile (n, m), so the wait reads
// the kernel's tile column as C's M-block and the publish transposes the tile index: the flags mean what they
// mean for every other kernel.
// `value` comes from the kernel arguments, or (value_ptr set) from a device word read when the wait or
// publish happens: per-call values that advance on the device, so a CUDA graph replay uses the value
// of its own call rather than the one baked in at capture.
#pragma once

#include <cstdint>

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

template <class Base, bool kSwap = false>
struct PublishAfterStore : Base {
  struct Arguments : Base::Arguments {
    PublishHookParams publish{};
  };
  struct Params : Base::Params {
    PublishHookParams publish{};
  };

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
      publish_tile(int32_t(cute::get<kSwap ? 1 : 0>(tile_coord_mnkl)), int32_t(cute::get<kSwap ? 0 : 1>(tile_coord_mnkl)),
                   thread_idx);
    }
    return next_states;
  }

 private:
  // Called by every epilogue thread; the TMA stores were committed by the epilogue's warp 0.
  CUTLASS_DEVICE void publish_tile(int32_t m_block, int32_t n_block, int thread_idx) const {
    if (thread_idx / 32 != 0) return;
    if (m_block >= publish_.tiles_m || n_block >= publish_.tiles_n) return;
    device::bulk_store_wait_all();
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
};

}  // namespace flux::gemm::kernel
