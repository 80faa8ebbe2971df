// src/gemm/kernel/cta_hooks.cuh — wait-before-load and publish-after-store (flux/gemm.h) for the GEMM core's
// kernels that run a work item per CTA without TMA (skinny_gemm.cuh, gemv_kernel.cuh): one thread waits or
// releases, and a CTA barrier orders every thread's loads after the wait and its stores before the release.
// Both are called by every thread of the CTA with the same arguments (their barriers are CTA-wide).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "flux/tile_order.h"
#include "src/device/signal.cuh"
#include "src/gemm/kernel/hook_params.h"

namespace flux::gemm::kernel {

// Before any load of A of unit row `m`: thread 0 waits (bounded, acquire, system scope) for flags[m] to reach the
// value; rows past tiles_m (padding) never wait.
__device__ __forceinline__ void cta_wait_before_load(const WaitHookParams& wait, int32_t m) {
  if (wait.flags == nullptr || m >= wait.tiles_m) return;
  if (threadIdx.x == 0) {
    device::chaos_delay(wait.ctx.chaos_seed, uint32_t(m) * 31u + 1u);
    const uint32_t value = wait.value_ptr != nullptr ? *wait.value_ptr : wait.value;
    device::wait_flag_geq(wait.flags + m, value, m, wait.ctx);
  }
  __syncthreads();  // every thread's loads of A come after the acquire
}

// After the unit's final stores: a CTA barrier, a system fence, and thread 0 releases the unit's flag (kTileFlag)
// or bumps its M-block counter (kBlockCounter); padding units never publish.
__device__ __forceinline__ void cta_publish_after_store(const PublishHookParams& publish, UnitCoord uc) {
  if (publish.mode == kPublishNone || uc.m >= publish.tiles_m || uc.n >= publish.tiles_n) return;
  __syncthreads();  // every thread's stores of the unit precede thread 0's release
  if (threadIdx.x == 0) {
    __threadfence_system();
    device::chaos_delay(publish.chaos_seed, uint32_t(uc.m * 7919 + uc.n));
    if (publish.mode == kPublishTileFlag) {
      const uint32_t value = publish.value_ptr != nullptr ? *publish.value_ptr : publish.value;
      device::st_release_sys(publish.flags + int64_t(uc.m) * publish.tiles_n + uc.n, value);
    } else {
      device::red_add_release_sys(publish.flags + uc.m, 1u);
    }
  }
}

}  // namespace flux::gemm::kernel
