// src/gemm/split_k_reduce.h — the second half of a split-K GEMM: C = sum over slices of the fp32
// partials (+ bias), in slice order 0, 1, ..., S-1, so a split-K result is bitwise reproducible from
// run to run (no atomics, no order that depends on timing). FP8 (scale_a / scale_b set): C = (sum x sa) x sb
// + bias, the FP8 kernels' epilogue, sa per row and sb per column or one scalar each.
//
// Grid: tiles of C (the GEMM config's tile_m x tile_n) x row chunks of a tile, one 16-byte load of
// every slice per thread, so a handful of tiles still spreads over many SMs (one CTA per tile was
// measured 4x slower than the whole GEMM at 128 x 384 x 2048). Extension point (c) keeps its meaning
// under split-K: the last chunk CTA of a tile to finish (an arrival counter per tile, zeroed by the
// plan before the GEMM) publishes it, flag released or M-block counter bumped as PublishAfterStore
// does for the unsplit GEMM, after every chunk's stores. Plain data only; defined in
// src/gemm/kernel/split_k_reduce.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "flux/types.h"
#include "src/gemm/kernel/hook_params.h"

namespace flux::gemm {

struct SplitKReduceLaunch {
  DType dtype = DType::kBF16;        // C and bias (bf16 / fp16)
  int64_t m = 0, n = 0;
  int32_t splits = 1;
  int32_t tile_m = 0, tile_n = 0;  // the tile grid of C (publish granularity)
  const float* workspace = nullptr;  // [splits, m, n]
  uint32_t* arrivals = nullptr;      // publish only: tiles_m x tiles_n counters, zero before the launch
  const void* bias = nullptr;        // [n] or nullptr
  const float* scale_a = nullptr;    // FP8: [m] (scale_vectors) or one scalar; nullptr: unscaled
  const float* scale_b = nullptr;    // FP8: [n] (scale_vectors) or one scalar
  bool scale_vectors = false;
  void* c = nullptr;                 // [m, n]
  kernel::PublishHookParams publish{};
};

// Launched as a programmatic dependent of the GEMM before it on `stream` (griddepcontrol.wait before
// the first load: it may be scheduled while the GEMM drains, and reads the partials only after the
// GEMM has completed and flushed them).
void launch_split_k_reduce(const SplitKReduceLaunch& launch, cudaStream_t stream);

// Loads the reduction kernels' module now (cudaFuncGetAttributes on each instantiation). Under CUDA's lazy module
// loading (the default) a kernel's module is otherwise loaded at its first launch, and that load can wait for the
// kernels already running on the device: a split-K GEMM whose slices wait for a flag (wait-before-load) then sees
// the flag's producer, enqueued after the GEMM by the same host thread, stall behind the load until the wait times
// out (seen on the H200, 2026-12-03: SplitKGpu.WaitBeforeLoadHoldsEverySlice as the first GEMM of its process).
// GemmPlan's constructor calls it with the GEMM kernels' own preparation (cudaFuncSetAttribute, which loads them).
void prepare_split_k_reduce(int device);

// Rows of a tile one reduction CTA covers (a tile of tile_n columns; what the grid is made of).
int32_t split_k_reduce_rows_per_cta(int32_t tile_n);

}  // namespace flux::gemm
