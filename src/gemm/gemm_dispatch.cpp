// src/gemm/gemm_dispatch.cpp — runtime dispatch over the compiled GEMM core instantiations.
#include <array>

#include "src/common/check.h"
#include "src/gemm/gemm_launch.h"

namespace flux::gemm {
namespace {

using PrepareFn = KernelInfo (*)(int);
using LaunchFn = void (*)(const KernelLaunch&, cudaStream_t);

struct Entry {
  PrepareFn prepare;
  LaunchFn launch;
};

template <DType kDType, WeightLayout kLayout, ConfigId kConfig>
constexpr Entry entry() {
  return {&sm90_gemm_prepare<kDType, kLayout, kConfig>, &sm90_gemm_launch<kDType, kLayout, kConfig>};
}

template <DType kDType, WeightLayout kLayout>
constexpr std::array<Entry, kNumConfigs> row() {
  return {entry<kDType, kLayout, ConfigId::k128x256x64CoopC2x1>(),
          entry<kDType, kLayout, ConfigId::k128x128x64PingpongC1x2>(),
          entry<kDType, kLayout, ConfigId::k256x128x64CoopC1x2>(),
          entry<kDType, kLayout, ConfigId::k64x256x64PingpongC2x1>()};
}

// [dtype][layout][config]
constexpr std::array<std::array<std::array<Entry, kNumConfigs>, 2>, 2> kTable = {{
    {{row<DType::kBF16, WeightLayout::kNK>(), row<DType::kBF16, WeightLayout::kKN>()}},
    {{row<DType::kFP16, WeightLayout::kNK>(), row<DType::kFP16, WeightLayout::kKN>()}},
}};

const Entry& lookup(DType dtype, WeightLayout layout, ConfigId config) {
  int d = static_cast<int>(dtype), l = static_cast<int>(layout), c = static_cast<int>(config);
  FLUX_CHECK(d >= 0 && d < 2 && l >= 0 && l < 2 && c >= 0 && c < kNumConfigs, "no GEMM kernel for dtype ", d,
             " layout ", l, " config ", c);
  return kTable[d][l][c];
}

}  // namespace

KernelInfo prepare_kernel(DType dtype, WeightLayout layout, ConfigId config, int device) {
  return lookup(dtype, layout, config).prepare(device);
}

void launch_kernel(DType dtype, WeightLayout layout, ConfigId config, const KernelLaunch& launch,
                   cudaStream_t stream) {
  lookup(dtype, layout, config).launch(launch, stream);
}

}  // namespace flux::gemm
