// src/gemm/gemm_dispatch.cpp — runtime dispatch over the compiled GEMM core instantiations.
#include <array>

#include "flux/error.h"
#include "src/common/check.h"
#include "src/gemm/gemm_launch.h"

namespace flux::gemm {
namespace {

using PrepareFn = KernelInfo (*)(int);
using LaunchFn = void (*)(const KernelLaunch&, cudaStream_t);

struct Entry {
  PrepareFn prepare = nullptr;
  LaunchFn launch = nullptr;
};

// kPartial exists only for configs with split_k (FluxInstantiations.cmake generates the same set).
template <DType kDType, WeightLayout kLayout, ConfigId kConfig, GemmOutput kOutput>
constexpr Entry entry() {
  if constexpr (kOutput == GemmOutput::kPartial && !config_shape(kConfig).split_k) {
    return {};
  } else {
    return {&sm90_gemm_prepare<kDType, kLayout, kConfig, kOutput>, &sm90_gemm_launch<kDType, kLayout, kConfig, kOutput>};
  }
}

template <DType kDType, WeightLayout kLayout, GemmOutput kOutput>
constexpr std::array<Entry, kNumConfigs> row() {
  return {entry<kDType, kLayout, ConfigId::k128x256x64CoopC2x1, kOutput>(),
          entry<kDType, kLayout, ConfigId::k128x128x64PingpongC1x2, kOutput>(),
          entry<kDType, kLayout, ConfigId::k256x128x64CoopC1x2, kOutput>(),
          entry<kDType, kLayout, ConfigId::k64x256x64PingpongC1x2, kOutput>(),
          entry<kDType, kLayout, ConfigId::k64x128x64PingpongSwapC1x2, kOutput>()};
}

template <DType kDType, WeightLayout kLayout>
constexpr std::array<std::array<Entry, kNumConfigs>, 2> outputs() {
  return {row<kDType, kLayout, GemmOutput::kFinal>(), row<kDType, kLayout, GemmOutput::kPartial>()};
}

// [dtype][layout][output][config]
constexpr std::array<std::array<std::array<std::array<Entry, kNumConfigs>, 2>, 2>, 2> kTable = {{
    {{outputs<DType::kBF16, WeightLayout::kNK>(), outputs<DType::kBF16, WeightLayout::kKN>()}},
    {{outputs<DType::kFP16, WeightLayout::kNK>(), outputs<DType::kFP16, WeightLayout::kKN>()}},
}};

const Entry& lookup(DType dtype, WeightLayout layout, ConfigId config, GemmOutput output) {
  int d = static_cast<int>(dtype), l = static_cast<int>(layout), c = static_cast<int>(config),
      o = static_cast<int>(output);
  FLUX_CHECK(d >= 0 && d < 2 && l >= 0 && l < 2 && c >= 0 && c < kNumConfigs && o >= 0 && o < 2,
             "no GEMM kernel for dtype ", d, " layout ", l, " config ", c, " output ", o);
  const Entry& e = kTable[d][l][o][c];
  if (e.launch == nullptr) {
    throw Unsupported(detail::cat("flux gemm: config ", config_shape(config).name,
                                  " is not compiled with split-K partial output (split-K configs: those with "
                                  "ConfigShape::split_k in src/gemm/gemm_config.h)"));
  }
  return e;
}

}  // namespace

KernelInfo prepare_kernel(DType dtype, WeightLayout layout, ConfigId config, GemmOutput output, int device) {
  return lookup(dtype, layout, config, output).prepare(device);
}

void launch_kernel(DType dtype, WeightLayout layout, ConfigId config, GemmOutput output, const KernelLaunch& launch,
                   cudaStream_t stream) {
  lookup(dtype, layout, config, output).launch(launch, stream);
}

}  // namespace flux::gemm
