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
        &sm90_skinny_prepare<DType::D, DType::D, WeightLayout::L, ConfigId::C, GemmOutput::O>,           \
        &sm90_skinny_launch<DType::D, DType::D, WeightLayout::L, ConfigId::C, GemmOutput::O>},
#define FLUX_GEMM_FP8_SKINNY_KERNEL(OUT, L, C)                                                           \
  Entry{fp8_kernel_key(DType::OUT, ScaleKind::kPerTensor, WeightLayout::L, ConfigId::C),                 \
        &sm90_skinny_prepare<DType::kE4M3, DType::OUT, WeightLayout::L, ConfigId::C, GemmOutput::kFinal>, \
        &sm90_skinny_launch<DType::kE4M3, DType::OUT, WeightLayout::L, ConfigId::C, GemmOutput::kFinal>}, \
  Entry{fp8_kernel_key(DType::OUT, ScaleKind::kPerRowCol, WeightLayout::L, ConfigId::C),                 \
        &sm90_skinny_prepare<DType::kE4M3, DType::OUT, WeightLayout::L, ConfigId::C, GemmOutput::kFinal>, \
        &sm90_skinny_launch<DType::kE4M3, DType::OUT, WeightLayout::L, ConfigId::C, GemmOutput::kFinal>},
#define FLUX_GEMM_FP8_SKINNY_PARTIAL(L, C)                                                               \
  Entry{fp8_partial_kernel_key(WeightLayout::L, ConfigId::C),                                             \
        &sm90_skinny_prepare<DType::kE4M3, DType::kFP32, WeightLayout::L, ConfigId::C, GemmOutput::kPartial>, \
        &sm90_skinny_launch<DType::kE4M3, DType::kFP32, WeightLayout::L, ConfigId::C, GemmOutput::kPartial>},
#define FLUX_GEMM_FP8_KERNEL(OUT, L, C)                                                                  \
  Entry{fp8_kernel_key(DType::OUT, ScaleKind::kPerTensor, WeightLayout::L, ConfigId::C),                 \
        &sm90_fp8_gemm_prepare<DType::OUT, WeightLayout::L, ConfigId::C>,                               \
        &sm90_fp8_gemm_launch<DType::OUT, WeightLayout::L, ConfigId::C>},                               \
  Entry{fp8_kernel_key(DType::OUT, ScaleKind::kPerRowCol, WeightLayout::L, ConfigId::C),                 \
        &sm90_fp8_gemm_prepare<DType::OUT, WeightLayout::L, ConfigId::C>,                               \
        &sm90_fp8_gemm_launch<DType::OUT, WeightLayout::L, ConfigId::C>},
#include "generated/gemm_kernel_manifest.inc"
#undef FLUX_GEMM_FP8_SKINNY_PARTIAL
#undef FLUX_GEMM_FP8_SKINNY_KERNEL
#undef FLUX_GEMM_FP8_KERNEL
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

std::string to_string(const KernelKey& key) {
  const int c = static_cast<int>(key.config);
  const char* config = c >= 0 && c < kNumConfigs ? kConfigShapes[c].name : "unknown-config";
  return detail::cat("a=", flux::to_string(key.a), " b=", flux::to_string(key.b), " out=", flux::to_string(key.out),
                     " acc=", flux::to_string(key.acc), " scale=", flux::to_string(key.scale), " layout=",
                     flux::to_string(key.layout), " config=", config, " output=",
                     key.output == GemmOutput::kPartial ? "partial" : "final");
}

bool has_kernel(const KernelKey& key) { return find(key) != nullptr; }

}  // namespace flux::gemm

namespace flux {

bool gemm_config_compiled(const GemmConfigInfo& config, DType dtype, WeightLayout layout) {
  if (config.id < 0 || config.id >= gemm::kNumConfigs) return false;
  const auto id = static_cast<gemm::ConfigId>(config.id);
  if (dtype == DType::kE4M3) {  // every FP8 kernel has both output types and both scale kinds
    return gemm::has_kernel(gemm::fp8_kernel_key(DType::kBF16, ScaleKind::kPerTensor, layout, id));
  }
  return gemm::has_kernel(gemm::core_kernel_key(dtype, layout, id, gemm::GemmOutput::kFinal));
}

}  // namespace flux

namespace flux::gemm {

KernelKey kernel_key(const GemmDesc& desc, ConfigId config, GemmOutput output) {
  if (desc.dtype == DType::kE4M3) {
    return output == GemmOutput::kPartial ? fp8_partial_kernel_key(desc.layout, config)
                                          : fp8_kernel_key(desc.out_dtype, desc.scale, desc.layout, config);
  }
  return core_kernel_key(desc.dtype, desc.layout, config, output);
}

KernelInfo prepare_kernel(const KernelKey& key, int device) { return lookup(key).prepare(device); }

void launch_kernel(const KernelKey& key, const KernelLaunch& launch, cudaStream_t stream) {
  lookup(key).launch(launch, stream);
}

}  // namespace flux::gemm
