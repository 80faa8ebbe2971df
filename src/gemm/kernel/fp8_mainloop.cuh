// src/gemm/kernel/fp8_mainloop.cuh — the FP8 kernels' mainloop: CUTLASS's sm90 FP8 TMA warp-specialized
// collective (MainloopSm90TmaGmmaWarpSpecializedFP8: TMA loads, pipeline, WGMMA) with its consumer loop, mma(),
// written again so that the math warp groups of a cooperative CTA promote at different k-tiles.
//
// Why: FP8 WGMMA accumulates in reduced precision, so the mainloop adds the tensor cores' partial sums into fp32
// accumulators every `mma_promotion_interval` MMAs (16 by default: GemmOptions::fp8_promotion). Each promotion
// waits for every MMA the warp group has issued (warpgroup_wait<0>) before it may read the partial sums. In a
// cooperative CTA both math warp groups consume the same shared-memory stage at the same time, so in CUTLASS's loop
// they drain together and the tensor cores idle for the last batch's latency plus the adds, once per interval
// (session 7: promotion 16 / 32 / 64 ran 0.87 / 0.92 / 0.94 of cuBLASLt). Here the odd warp groups start half an
// interval (in whole k-tiles) in: each promotes while the other's MMAs keep the tensor cores busy. Same registers
// (one set of partial sums per warp group), the same interval for every warp group after the first, so the same
// accuracy. A ping-pong CTA runs one math warp group's mainloop at a time (thread_idx < 128 for both): no stagger.
//
// Assumptions: Base is CUTLASS's FP8 mainloop (K_PIPE_MMAS in-flight k-tiles, shared-memory A and B); the
// interval is a multiple of the MMAs per k-tile (CUTLASS's can_implement checks it, the plan asks for 4..64).
#pragma once

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"

namespace flux::gemm::kernel {

template <class Base>
struct StaggeredFp8Mainloop : Base {
  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(typename Base::MainloopPipeline pipeline, typename Base::PipelineState smem_pipe_read,
                          FrgTensorC& accum, int k_tile_count, int thread_idx,
                          typename Base::TensorStorage& shared_tensors, typename Base::Params const& mainloop_params) {
    using namespace cute;
    using cutlass::NumThreadsPerWarpGroup;
    using TiledMma = typename Base::TiledMma;
    static_assert(is_rmem<FrgTensorC>::value, "the accumulators live in registers");
    static_assert(cute::is_void_v<typename Base::SmemCopyAtomA> && cute::is_void_v<typename Base::SmemCopyAtomB>,
                  "WGMMA reads A and B from shared memory");

    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), typename Base::SmemLayoutA{});  // (M,K,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), typename Base::SmemLayoutB{});  // (N,K,PIPE)

    constexpr int kMathWarpGroups = size(TiledMma{}) / NumThreadsPerWarpGroup;
    const int warp_group = __shfl_sync(0xffffffff, thread_idx / NumThreadsPerWarpGroup, 0);
    TiledMma tiled_mma;
    auto thread_mma = tiled_mma.get_slice(make_layout(Int<kMathWarpGroups>{}, Int<NumThreadsPerWarpGroup>{})(warp_group));
    Tensor tCrA = thread_mma.make_fragment_A(thread_mma.partition_A(sA));  // (MMA,MMA_M,MMA_K,PIPE) descriptors
    Tensor tCrB = thread_mma.make_fragment_B(thread_mma.partition_B(sB));  // (MMA,MMA_N,MMA_K,PIPE) descriptors
    CUTE_STATIC_ASSERT_V(size<1>(tCrA) == size<1>(accum));                 // M
    CUTE_STATIC_ASSERT_V(size<1>(tCrB) == size<2>(accum));                 // N

    constexpr int kMmasPerKTile = size<2>(decltype(tCrA){});
    const uint32_t interval = mainloop_params.mma_promotion_interval;
    // MMAs since the last promotion; the odd warp groups start half an interval (whole k-tiles) in.
    uint32_t count = (warp_group & 1) ? (interval / kMmasPerKTile / 2) * kMmasPerKTile : 0u;

    Tensor partial = make_fragment_like(accum);  // the tensor cores' sums since the last promotion
    clear(accum);
    bool restart = true;  // the next k-tile overwrites `partial` (ScaleOut::Zero) instead of adding to it

    auto issue = [&](int stage) {
      if (restart) tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
      warpgroup_fence_operand(partial);
      warpgroup_arrive();
      CUTLASS_PRAGMA_UNROLL
      for (int k_block = 0; k_block < kMmasPerKTile; ++k_block) {
        cute::gemm(tiled_mma, tCrA(_, _, k_block, stage), tCrB(_, _, k_block, stage), partial);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
    };
    auto promote = [&]() {  // every MMA issued so far is done before `partial` is read
      warpgroup_wait<0>();
      warpgroup_fence_operand(partial);
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(accum); ++i) accum(i) += partial(i);
      warpgroup_fence_operand(partial);
    };
    auto promote_if_due = [&]() {
      count += kMmasPerKTile;
      restart = __shfl_sync(0xffffffff, count >= interval, 0);  // uniform, as WGMMA's aligned waits need
      if (restart) {
        promote();
        count = 0;
      }
    };

    // The first K_PIPE_MMAS k-tiles: nothing to release yet.
    typename Base::PipelineState smem_pipe_release = smem_pipe_read;
    const int prologue = min(Base::K_PIPE_MMAS, k_tile_count);
    CUTLASS_PRAGMA_UNROLL
    for (int k = prologue; k > 0; --k) {
      pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
      issue(smem_pipe_read.index());
      promote_if_due();
      ++smem_pipe_read;
    }
    k_tile_count -= prologue;

    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count) {
      pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
      issue(smem_pipe_read.index());
      warpgroup_wait<Base::K_PIPE_MMAS>();  // the stage K_PIPE_MMAS k-tiles back is read: release it
      warpgroup_fence_operand(partial);
      promote_if_due();
      pipeline.consumer_release(smem_pipe_release);
      ++smem_pipe_read;
      ++smem_pipe_release;
    }

    if (__shfl_sync(0xffffffff, count > 0, 0)) promote();  // the last, partial interval
    warpgroup_fence_operand(accum);
  }
};

}  // namespace flux::gemm::kernel
