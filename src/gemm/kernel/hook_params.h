// src/gemm/kernel/hook_params.h — device-side form of the GEMM core's extension points (plain data,
// shared by the host launcher and the kernel wrappers in hooked_collectives.cuh).
#pragma once

#include <cstdint>

#include "src/device/wait_context.h"

namespace flux::gemm::kernel {

// Form of GemmWait (flux/gemm.h) the kernel reads.
struct WaitHookParams {
  const uint32_t* flags = nullptr;  // one per M-block (tile_m rows); null: no waiting
  uint32_t value = 0;               // wait until flags[m_block] has reached value (wrap-safe)
  const uint32_t* value_ptr = nullptr;  // if set, the value is read from this device word instead
  int32_t tiles_m = 0;              // number of real M-blocks (cluster padding tiles never wait)
  device::WaitContext ctx{};
};

enum PublishHookMode : int32_t { kPublishNone = 0, kPublishTileFlag = 1, kPublishBlockCounter = 2 };

// Form of GemmPublish (flux/gemm.h) the kernel reads.
struct PublishHookParams {
  uint32_t* flags = nullptr;  // kPublishTileFlag: tiles_m * tiles_n flags; kPublishBlockCounter: tiles_m
  uint32_t value = 0;         // stored by kPublishTileFlag
  const uint32_t* value_ptr = nullptr;  // if set, the value is read from this device word instead
  int32_t mode = kPublishNone;
  int32_t tiles_m = 0;        // real tiles (cluster padding tiles never publish)
  int32_t tiles_n = 0;
  uint32_t chaos_seed = 0;    // FLUX_CHAOS_SEED: a random delay before each release (0: off)
};

}  // namespace flux::gemm::kernel
