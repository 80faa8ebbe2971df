// src/gemm/kernel/lagged_fp8_mainloop.cuh — the FP8 mainloop's math side with the promotion one k-tile behind.
//
// Hopper's FP8 WGMMA accumulates with fewer mantissa bits than fp32, so an FP8 GEMM adds ("promotes") the tensor
// cores' partial sums into fp32 accumulators every few MMAs. CUTLASS's sm90 FP8 mainloop
// (sm90_mma_tma_gmma_ss_warpspecialized_fp8.hpp, GmmaFP8Accumulation) keeps one set of partial sums, so every
// promotion first waits for all of the warp group's MMAs in flight (warpgroup_wait<0>): the group's MMA queue
// drains once per promotion interval. Measured (notes of session 7/8: promotion every 16 / 32 / 64 MMAs ran 0.87 /
// 0.92 / 0.94 of cuBLASLt FP8; ncu: 78% tensor throughput against cuBLASLt's 92.6% with the same 168 registers at
// launch).
//
// LaggedFp8Mma<Mainloop> overrides mma() only (the producer side, TMA, pipeline and epilogue stay CUTLASS's). It
// promotes every k-tile (4 MMAs) and keeps two sets of partial sums, P0 and P1, that take turns per k-tile: once k-tile t's MMAs are issued into
// P[t % 2], warpgroup_wait<1> means k-tile t - 1's have finished (one batch, t's, stays in flight) and P[(t - 1) % 2]
// is added into the fp32 accumulators while the tensor cores work on t. The queue never drains before the tile's
// last k-tile. Costs: one more set of partial sums in registers (a 64 x 128 share per math warp group: 3 x 64
// registers per thread, within the 232 a consumer warp group gets after setmaxnreg; ptxas -v: 168 registers at
// launch, no spills, for 128x128x128 cooperative) and 64 additions per thread per k-tile. Results: the sums of
// CUTLASS's mainloop at interval 4 (every k-tile's partial sums from zero, added into the zeroed fp32 accumulators in
// k order). Why not other intervals: ptxas serialized every WGMMA (info C7514) when the groups were a runtime number
// of k-tiles, its analysis unable to see which batch a promotion waited for, and one kernel holding this mainloop
// and CUTLASS's (chosen by the interval) spilled 760 bytes. Measured against CUTLASS's (H100, 2026-12-07, session
// 27): FP8 suite median of cuBLASLt FP8 0.914 against 0.870 at its default interval 16, 0.766 at 4 (the same sums),
// 0.922 at 64 (error median 1.85e-3 against 1.69e-3 here). With no trade-off left but that 1% at four times
// CUTLASS's coarsest interval, the interval knob (GemmOptions::fp8_promotion, FLUX_GEMM_FP8_PROMOTION) was retired.

// Contract with the kernel layer (as CUTLASS's): mma() releases every k-tile's shared-memory stage but the last;
// the collective's own mma_tail() waits for all MMAs and releases that one (K_PIPE_MMAS = 1).
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/gemm/collective/collective_builder.hpp"

namespace flux::gemm::kernel {

inline constexpr uint32_t kLaggedFp8MmasPerKTile = 4;  // FP8 k-tiles are 128 deep, an MMA 32

template <class Base>
struct LaggedFp8Mma : Base {
  static_assert(Base::K_PIPE_MMAS == 1, "LaggedFp8Mma keeps one k-tile's MMAs in flight, as CUTLASS's FP8 mainloop");

  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(typename Base::MainloopPipeline pipeline, typename Base::PipelineState smem_pipe_read,
                          FrgTensorC& accum, int k_tile_count, int thread_idx,
                          typename Base::TensorStorage& shared_tensors, typename Base::Params const& mainloop_params) {
    (void)mainloop_params;  // its mma_promotion_interval is CUTLASS's; this loop promotes every k-tile
    using namespace cute;
    static_assert(is_rmem<FrgTensorC>::value, "C tensor must be rmem resident.");
    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), typename Base::SmemLayoutA{});
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), typename Base::SmemLayoutB{});

    using TiledMma = typename Base::TiledMma;
    constexpr int kMmaWarpGroups = size(TiledMma{}) / cutlass::NumThreadsPerWarpGroup;
    Layout warp_group_thread_layout = make_layout(Int<kMmaWarpGroups>{}, Int<cutlass::NumThreadsPerWarpGroup>{});
    const int warp_group_idx = __shfl_sync(0xFFFFFFFF, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    TiledMma tiled_mma;
    auto thread_mma = tiled_mma.get_slice(warp_group_thread_layout(warp_group_idx));
    Tensor tCsA = thread_mma.partition_A(sA);         // (MMA,MMA_M,MMA_K,PIPE)
    Tensor tCsB = thread_mma.partition_B(sB);         // (MMA,MMA_N,MMA_K,PIPE)
    Tensor tCrA = thread_mma.make_fragment_A(tCsA);   // descriptors
    Tensor tCrB = thread_mma.make_fragment_B(tCsB);
    CUTE_STATIC_ASSERT_V(size<1>(tCsA) == size<1>(accum));
    CUTE_STATIC_ASSERT_V(size<1>(tCsB) == size<2>(accum));

    constexpr int kBlocks = decltype(size<2>(tCrA))::value;
    static_assert(kBlocks == kLaggedFp8MmasPerKTile, "FP8 tiles are 128 deep: 4 MMAs of K = 32 per k-tile");

    Tensor p0 = make_fragment_like(accum);
    Tensor p1 = make_fragment_like(accum);
    clear(accum);
    warpgroup_fence_operand(accum);

    typename Base::PipelineState smem_pipe_release = smem_pipe_read;
    bool first_tile = true;
    // Issues one k-tile's MMAs into partial sums p (from zero), waits until at most this batch is in flight, and
    // releases the previous k-tile's stage (all of its MMAs are done).
    auto issue = [&](auto& p) {
      auto barrier_token = pipeline.consumer_try_wait(smem_pipe_read);
      pipeline.consumer_wait(smem_pipe_read, barrier_token);
      const int read_stage = smem_pipe_read.index();
      tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
      warpgroup_fence_operand(p);
      warpgroup_arrive();
      CUTLASS_PRAGMA_UNROLL
      for (int k_block = 0; k_block < kBlocks; ++k_block) {
        cute::gemm(tiled_mma, tCrA(_, _, k_block, read_stage), tCrB(_, _, k_block, read_stage), p);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      warpgroup_wait<1>();
      warpgroup_fence_operand(p);
      if (!first_tile) {
        pipeline.consumer_release(smem_pipe_release);
        ++smem_pipe_release;
      }
      first_tile = false;
      ++smem_pipe_read;
    };
    auto promote = [&](auto& p) {
      warpgroup_fence_operand(p);
      warpgroup_fence_operand(accum);
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(accum); ++i) accum(i) += p(i);
      warpgroup_fence_operand(accum);
    };
    // p0 and p1 take turns per k-tile: once a k-tile's MMAs are issued into one, the other's (the previous
    // k-tile's) have finished (issue()'s warpgroup_wait<1>) and are added into the fp32 accumulators.
    issue(p0);
    --k_tile_count;
    CUTLASS_PRAGMA_NO_UNROLL
    while (k_tile_count >= 2) {
      issue(p1);
      promote(p0);
      issue(p0);
      promote(p1);
      k_tile_count -= 2;
    }
    if (k_tile_count == 1) {
      issue(p1);
      promote(p0);
      warpgroup_wait<0>();
      promote(p1);
    } else {
      warpgroup_wait<0>();
      promote(p0);
    }
  }
};

}  // namespace flux::gemm::kernel
