// src/gemm/gemm_launch.h — the interface between host planning (gemm.cpp) and the compiled kernels
// (one translation unit per (dtype, layout, config), generated from sm90_gemm_instance.cu.in).
// Plain data only: no CUTLASS here, so host code compiles without it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "flux/gemm.h"
#include "flux/tile_order.h"
#include "flux/types.h"
#include "src/gemm/gemm_config.h"
#include "src/device/wait_context.h"
#include "src/gemm/kernel_key.h"
#include "src/gemm/kernel/hook_params.h"
#include "src/gemm/stream_k.h"

namespace flux::gemm {

struct KernelLaunch {
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* bias = nullptr;
  void* c = nullptr;
  const float* scale_a = nullptr;  // FP8: per-tensor scalars, or [m] / [n] when scale_vectors
  const float* scale_b = nullptr;
  bool scale_vectors = false;
  int32_t splits = 1;         // kPartial: K is cut into `splits` slices (K / splits a multiple of 16 bytes)
  float* workspace = nullptr;  // kPartial: [splits, m, n] fp32 partial products; stream-K: one fp32 tile per CTA
  StreamKShape stream_k{};     // active: the cooperative kernel runs this decomposition (num_clusters = its workers)
  uint32_t* stream_k_flags = nullptr;  // stream-K: one per CTA and math warp group, zero between calls
  device::WaitContext stream_k_ctx{};  // stream-K: the fixup's bounded wait
  TileOrderMap order{};  // over C's units (tile_m x tile_n of C), swap-AB kernels included
  kernel::WaitHookParams wait{};
  kernel::PublishHookParams publish{};
  int device = 0;
  int num_clusters = 0;  // persistent grid: min(units, max active clusters) (the skinny kernels: one CTA per item)
  bool programmatic = false;  // launch as a programmatic dependent of the previous kernel on the stream
};

struct KernelInfo {
  int64_t smem_bytes = 0;
  int threads = 0;
  int max_active_clusters = 0;  // cudaOccupancyMaxActiveClusters on this device
};

// Defined once per instantiation (kPartial only for configs with ConfigShape::split_k). prepare() raises the kernel's dynamic shared-memory limit on
// `device` and measures cluster occupancy; launch() encodes the TMA descriptors and launches.
// Both throw flux::Error subclasses with the failing call in the text.
template <DType kDType, WeightLayout kLayout, ConfigId kConfig, GemmOutput kOutput>
KernelInfo sm90_gemm_prepare(int device);

template <DType kDType, WeightLayout kLayout, ConfigId kConfig, GemmOutput kOutput>
void sm90_gemm_launch(const KernelLaunch& launch, cudaStream_t stream);

// The skinny decode kernels (ConfigShape::skinny; src/gemm/kernel/skinny_gemm.cuh, instantiated by the generated
// skinny_gemm_*.cu files): the same contract, a kernel family of their own. A and B in kIn (bf16 / fp16, or e4m3 with
// the FP8 scales), C and bias in kOut (kIn for the 16-bit kernels; kFP32 for the FP8 partial kernels, which write
// unscaled fp32 partials like every kPartial kernel).
template <DType kIn, DType kOut, WeightLayout kLayout, ConfigId kConfig, GemmOutput kOutput>
KernelInfo sm90_skinny_prepare(int device);

template <DType kIn, DType kOut, WeightLayout kLayout, ConfigId kConfig, GemmOutput kOutput>
void sm90_skinny_launch(const KernelLaunch& launch, cudaStream_t stream);

// The FP8 kernels (e4m3 A and B, C in kOut, scales in the epilogue; ConfigShape::fp8): the same contract.
template <DType kOut, WeightLayout kLayout, ConfigId kConfig>
KernelInfo sm90_fp8_gemm_prepare(int device);

template <DType kOut, WeightLayout kLayout, ConfigId kConfig>
void sm90_fp8_gemm_launch(const KernelLaunch& launch, cudaStream_t stream);

// Runtime dispatch over the instantiations (gemm_dispatch.cpp, from the kernel manifest); a key with no
// compiled kernel is an Unsupported error naming it (src/gemm/kernel_key.h), raised before any CUDA call.
// The key of a plan's kernel for a config (FP8 descs: fp8_kernel_key, or fp8_partial_kernel_key for kPartial).
KernelKey kernel_key(const GemmDesc& desc, ConfigId config, GemmOutput output);
KernelInfo prepare_kernel(const KernelKey& key, int device);
void launch_kernel(const KernelKey& key, const KernelLaunch& launch, cudaStream_t stream);

}  // namespace flux::gemm
