// src/gemm/kernel_key.h — what a compiled GEMM kernel is: the types of A, B and the output, the
// accumulator, the scale kind, the weight layout, the tile config and the output kind. The compiled
// kernels are listed once (cmake/FluxInstantiations.cmake writes the translation units and the manifest
// gemm_dispatch.cpp builds its table from); a key with no kernel is an Unsupported error naming it.
// Plain data: host code and CPU tests include it without CUTLASS.
#pragma once

#include <cstdint>
#include <string>

#include "flux/types.h"
#include "src/gemm/gemm_config.h"

namespace flux::gemm {

// What the epilogue writes: C in the output type (+ bias), or fp32 split-K partials to a workspace.
enum class GemmOutput : int32_t { kFinal = 0, kPartial = 1 };

// How the inputs are scaled (FP8): flux::ScaleKind (flux/types.h).
using flux::ScaleKind;

struct KernelKey {
  DType a = DType::kBF16;
  DType b = DType::kBF16;
  DType out = DType::kBF16;
  DType acc = DType::kFP32;
  ScaleKind scale = ScaleKind::kNone;
  WeightLayout layout = WeightLayout::kNK;
  ConfigId config = ConfigId::k128x128x64PingpongC1x2;
  GemmOutput output = GemmOutput::kFinal;

  bool operator==(const KernelKey& o) const {
    return a == o.a && b == o.b && out == o.out && acc == o.acc && scale == o.scale && layout == o.layout &&
           config == o.config && output == o.output;
  }
};

// The key of the FP8 kernels: A and B in e4m3, C in `out` (bf16 / fp16), fp32 accumulation, scaled. One
// compiled kernel serves both scale kinds (its scale loads broadcast a scalar or read a vector, chosen
// per launch), listed under both keys.
inline KernelKey fp8_kernel_key(DType out, ScaleKind scale, WeightLayout layout, ConfigId config) {
  KernelKey key;
  key.a = key.b = DType::kE4M3;
  key.out = out;
  key.acc = DType::kFP32;
  key.scale = scale;
  key.layout = layout;
  key.config = config;
  key.output = GemmOutput::kFinal;
  return key;
}

// The key of the FP8 split-K partial kernels (the skinny FP8 config's): e4m3 A and B, unscaled fp32 partials (the
// reduction scales), one kernel for both output types and scale kinds.
inline KernelKey fp8_partial_kernel_key(WeightLayout layout, ConfigId config) {
  KernelKey key;
  key.a = key.b = DType::kE4M3;
  key.out = DType::kFP32;
  key.acc = DType::kFP32;
  key.scale = ScaleKind::kNone;
  key.layout = layout;
  key.config = config;
  key.output = GemmOutput::kPartial;
  return key;
}

// The key of today's 16-bit kernels: A, B and C in `dtype` (fp32 partials for kPartial), fp32
// accumulation, no scales.
inline KernelKey core_kernel_key(DType dtype, WeightLayout layout, ConfigId config, GemmOutput output) {
  KernelKey key;
  key.a = key.b = dtype;
  key.out = output == GemmOutput::kPartial ? DType::kFP32 : dtype;
  key.acc = DType::kFP32;
  key.scale = ScaleKind::kNone;
  key.layout = layout;
  key.config = config;
  key.output = output;
  return key;
}

using flux::to_string;
// "a=bf16 b=bf16 out=bf16 acc=fp32 scale=none layout=nk config=128x128x64_pingpong_c1x2 output=final"
std::string to_string(const KernelKey& key);

// Whether this build has a kernel for `key` (gemm_dispatch.cpp).
bool has_kernel(const KernelKey& key);

}  // namespace flux::gemm
