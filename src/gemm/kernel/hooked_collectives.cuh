// src/gemm/kernel/hooked_collectives.cuh — extension points (b) and (c) as thin wrappers around
// CUTLASS's sm90 collectives. Each wrapper adds one field to the collective's Arguments/Params and
// overrides one member; everything else (TMA descriptors, pipelines, WGMMA, epilogue fusion) is
// CUTLASS's own. With the hook's pointer null the added work is one predicated branch per tile.
//
//   WaitBeforeLoad<Mainloop>: before the producer warp issues the TMA loads of an output tile, one
//     lane waits (acquire, system scope, bounded) until flags[m_block] has reached value, then every
//     lane of the producer warp fences the async proxy so the TMA reads see the data the flag guards.
//   PublishAfterStore<Epilogue>: after the epilogue has issued a tile's TMA stores, the issuing warp
//     waits for their global writes to complete and fences the async proxy; then the tile's flag is
//     released (store `value`) or its M-block counter bumped (add 1), at system scope, by the
//     producer warp group's epilogue-load warp (idle otherwise: no C source), which walks the same tiles
//     and meets the issuing warp at a named barrier per tile. The system-scope release costs 0.3-0.7 us
//     per tile (scripts/device/release_probe.cu, s23a): off the math warps' path it overlaps the next
//     tile's mainloop. Measured side by side (s24b, H100, `flux-bench gemm --attribution`, the test half's
//     M >= 1024 rows every 6th, 69 rows): flux_publish / flux mean 1.023 -> 1.008, max 1.42 -> 1.08
//     (cooperative picks' median 1.017 -> 1.008). Memory model: the issuing thread's bulk writes are
//     complete and visible to the generic proxy before it reaches the barrier; bar.sync orders them
//     before the releasing warp's later accesses, and the release is cumulative over what that warp has
//     observed.
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

// kPingpong (a type, std::bool_constant: nvcc's host stub misspells a computed bool argument): the two math warp
// groups take a CTA's tiles in turn, each meeting the releasing warp at a barrier of its own.
template <class Base, bool kSwap = false, class kPingpong = std::false_type>
struct PublishAfterStore : Base {
  // Named barriers (CUTLASS's user ids, after its reserved ones): one per math warp group that stores tiles.
  static constexpr uint32_t kPublishBarrier = 0;
  static constexpr uint32_t kPublishBarrierThreads = 64;  // the storing warp + the releasing warp
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

  // The kernel runs the epilogue-load warp (load() per tile, load_tail()) when this is true.
  CUTLASS_DEVICE bool is_producer_load_needed() const { return Base::is_producer_load_needed() || delegated(); }

  // The epilogue-load warp (all 32 lanes), once per tile the epilogue computes, in the math warp groups' order:
  // wait for the storing warp at the tile's barrier, then release the tile's flag. No pipeline traffic (the
  // epilogue has no source to load when delegated()).
  template <class ProblemShapeMNKL, class TileShapeMNK, class TileCoordMNKL, class TiledMma>
  CUTLASS_DEVICE auto load(typename Base::LoadPipeline load_pipeline,
                           typename Base::LoadPipelineState load_pipe_producer_state,
                           ProblemShapeMNKL problem_shape_mnkl, TileShapeMNK tile_shape_MNK,
                           TileCoordMNKL tile_coord_mnkl, TiledMma tiled_mma, int thread_idx,
                           typename Base::TensorStorage& shared_tensors, int subtile_idx = -1) {
    if (!delegated()) {
      return Base::load(load_pipeline, load_pipe_producer_state, problem_shape_mnkl, tile_shape_MNK,
                        tile_coord_mnkl, tiled_mma, thread_idx, shared_tensors, subtile_idx);
    }
    const uint32_t group = kPingpong::value ? (tiles_seen_++ & 1u) : 0u;
    const int32_t m_block = int32_t(cute::get<kSwap ? 1 : 0>(tile_coord_mnkl));
    const int32_t n_block = int32_t(cute::get<kSwap ? 0 : 1>(tile_coord_mnkl));
    if (m_block < publish_.tiles_m && n_block < publish_.tiles_n) {
      cutlass::arch::NamedBarrier::arrive_and_wait(kPublishBarrierThreads, kPublishBarrier + group);
      if ((thread_idx & 31) == 0) release_tile(m_block, n_block);
      __syncwarp();
    }
    return load_pipe_producer_state;
  }

  CUTLASS_DEVICE auto load_tail(typename Base::LoadPipeline load_pipeline,
                                typename Base::LoadPipelineState load_pipe_producer_state) {
    if (!delegated()) return Base::load_tail(load_pipeline, load_pipe_producer_state);
    return load_pipe_producer_state;
  }

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
  // The releasing warp is the epilogue-load warp, free only where the epilogue loads no source.
  CUTLASS_DEVICE bool delegated() const {
    return publish_.mode != kPublishNone && !Base::is_producer_load_needed();
  }

  // Called by every epilogue thread; the TMA stores were committed by the epilogue's warp 0 (of each math warp
  // group in ping-pong kernels, whose thread_idx counts within the group).
  CUTLASS_DEVICE void publish_tile(int32_t m_block, int32_t n_block, int thread_idx) const {
    if (thread_idx / 32 != 0) return;
    if (m_block >= publish_.tiles_m || n_block >= publish_.tiles_n) return;
    device::bulk_store_wait_all();
    device::fence_proxy_async_global();
    __syncwarp();
    if (delegated()) {  // hand the release to the epilogue-load warp (load() above)
      const uint32_t group = kPingpong::value ? uint32_t(cutlass::canonical_warp_group_idx() - 1) : 0u;
      cutlass::arch::NamedBarrier::arrive_and_wait(kPublishBarrierThreads, kPublishBarrier + group);
      return;
    }
    if ((thread_idx & 31) == 0) release_tile(m_block, n_block);
  }

  CUTLASS_DEVICE void release_tile(int32_t m_block, int32_t n_block) const {
    device::chaos_delay(publish_.chaos_seed, uint32_t(m_block * 7919 + n_block));
    if (publish_.mode == kPublishTileFlag) {
      const uint32_t value = publish_.value_ptr != nullptr ? *publish_.value_ptr : publish_.value;
      device::st_release_sys(publish_.flags + int64_t(m_block) * publish_.tiles_n + n_block, value);
    } else {
      device::red_add_release_sys(publish_.flags + m_block, 1u);
    }
  }

  PublishHookParams publish_;
  uint32_t tiles_seen_ = 0;  // the epilogue-load warp's count of tiles (ping-pong: whose math warp group)
};

}  // namespace flux::gemm::kernel
