// src/gemm/split_k_reduce.h — the second half of a split-K GEMM: C = sum over slices of the fp32
// partials (+ bias), in slice order 0, 1, ..., S-1, so a split-K result is bitwise reproducible from
// run to run (no atomics, no order that depends on timing).
//
// One CTA per tile of C (the GEMM config's tile_m x tile_n), so extension point (c) keeps its meaning
// under split-K: a tile is published (flag released or M-block counter bumped, as PublishAfterStore
// does for the unsplit GEMM) by the CTA that stored its final value, after those stores. Plain data
// only; defined in src/gemm/kernel/split_k_reduce.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "flux/types.h"
#include "src/gemm/kernel/hook_params.h"

namespace flux::gemm {

struct SplitKReduceLaunch {
  DType dtype = DType::kBF16;
  int64_t m = 0, n = 0;
  int32_t splits = 1;
  int32_t tile_m = 0, tile_n = 0;  // the tile grid of C (publish granularity)
  const float* workspace = nullptr;  // [splits, m, n]
  const void* bias = nullptr;        // [n] or nullptr
  void* c = nullptr;                 // [m, n]
  kernel::PublishHookParams publish{};
};

// Launched as a programmatic dependent of the GEMM before it on `stream` (griddepcontrol.wait before
// the first load: it may be scheduled while the GEMM drains, and reads the partials only after the
// GEMM has completed and flushed them).
void launch_split_k_reduce(const SplitKReduceLaunch& launch, cudaStream_t stream);

}  // namespace flux::gemm
