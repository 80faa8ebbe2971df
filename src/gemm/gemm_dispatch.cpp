// src/gemm/gemm_dispatch.cpp — runtime dispatch over the compiled GEMM core instantiations.
//
// The table is built from the kernel manifest that cmake/FluxInstantiations.cmake writes beside the
// translation units it generates (generated/gemm_kernel_manifest.inc, one FLUX_GEMM_KERNEL line per
// kernel), so the list of compiled kernels exists once.
#include <string>
#include <vector>

#include "flux/error.h"
#include "flux/gemm.h"
#include "src/common/check.h"
#include "src/gemm/gemm_launch.h"
#include "src/gemm/kernel_key.h"

namespace flux::gemm {
namespace {

using PrepareFn = KernelInfo (*)(int);
using LaunchFn = void (*)(const KernelLaunch&, cudaStream_t);

struct Entry {
  KernelKey key;
  PrepareFn prepare = nullptr;
  LaunchFn launch = nullptr;
};

const std::vector<Entry>& table() {
  static const std::vector<Entry> entries = {
#define FLUX_GEMM_KERNEL(D, L, C, O)                                                                     \
  Entry{core_kernel_key(DType::D, WeightLayout::L, ConfigId::C, GemmOutput::O),                          \
        &sm90_gemm_prepare<DType::D, WeightLayout::L, ConfigId::C, GemmOutput::O>,                       \
        &sm90_gemm_launch<DType::D, WeightLayout::L, ConfigId::C, GemmOutput::O>},
#define FLUX_GEMM_SKINNY_KERNEL(D, L, C, O)                                                              \
  Entry{core_kernel_key(DType::D, WeightLayout::L, ConfigId::C, GemmOutput::O),                          \
        &sm90_skinny_prepare<DType::D, WeightLayout::L, ConfigId::C, GemmOutput::O>,                     \
        &sm90_skinny_launch<DType::D, WeightLayout::L, ConfigId::C, GemmOutput::O>},
#include "generated/gemm_kernel_manifest.inc"
#undef FLUX_GEMM_SKINNY_KERNEL
#undef FLUX_GEMM_KERNEL
  };
  return entries;
}

const Entry* find(const KernelKey& key) {
  for (const Entry& e : table()) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

const Entry& lookup(const KernelKey& key) {
  const Entry* e = find(key);
  if (e == nullptr) {
    throw Unsupported(detail::cat("flux gemm: no compiled kernel for ", to_string(key),
                                  " (the compiled kernels are listed in cmake/FluxInstantiations.cmake; split-K "
                                  "partial kernels exist for configs with ConfigShape::split_k)"));
  }
  return *e;
}

}  // namespace

const char* to_string(ScaleKind scale) {
  switch (scale) {
    case ScaleKind::kNone:
      return "none";
    case ScaleKind::kPerTensor:
      return "per-tensor";
    case ScaleKind::kPerRowCol:
      return "per-row-col";
  }
  return "unknown-scale";
}

std::string to_string(const KernelKey& key) {
  const int c = static_cast<int>(key.config);
  const char* config = c >= 0 && c < kNumConfigs ? kConfigShapes[c].name : "unknown-config";
  return detail::cat("a=", flux::to_string(key.a), " b=", flux::to_string(key.b), " out=", flux::to_string(key.out),
                     " acc=", flux::to_string(key.acc), " scale=", to_string(key.scale), " layout=",
                     flux::to_string(key.layout), " config=", config, " output=",
                     key.output == GemmOutput::kPartial ? "partial" : "final");
}

bool has_kernel(const KernelKey& key) { return find(key) != nullptr; }

}  // namespace flux::gemm

namespace flux {

bool gemm_config_compiled(const GemmConfigInfo& config, DType dtype, WeightLayout layout) {
  if (config.id < 0 || config.id >= gemm::kNumConfigs) return false;
  return gemm::has_kernel(
      gemm::core_kernel_key(dtype, layout, static_cast<gemm::ConfigId>(config.id), gemm::GemmOutput::kFinal));
}

}  // namespace flux

namespace flux::gemm {

KernelInfo prepare_kernel(DType dtype, WeightLayout layout, ConfigId config, GemmOutput output, int device) {
  return lookup(core_kernel_key(dtype, layout, config, output)).prepare(device);
}

void launch_kernel(DType dtype, WeightLayout layout, ConfigId config, GemmOutput output, const KernelLaunch& launch,
                   cudaStream_t stream) {
  lookup(core_kernel_key(dtype, layout, config, output)).launch(launch, stream);
}

}  // namespace flux::gemm
