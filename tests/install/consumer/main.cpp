// Uses the installed headers and library: lists the configs, validates a shape, and reports the GPU
// (or that there is none; both are fine for this test).
#include <cstdio>

#include "flux/error.h"
#include "flux/gemm.h"

int main() {
  std::printf("flux consumer: %zu configs\n", flux::gemm_configs().size());
  flux::validate_gemm_desc(flux::GemmDesc{4096, 4096, flux::DType::kBF16, flux::WeightLayout::kNK});
  try {
    flux::DeviceLimits d = flux::query_device_limits();
    std::printf("flux consumer: device %s with %d SMs\n", d.name.c_str(), d.sm_count);
  } catch (const flux::Unsupported& e) {
    std::printf("flux consumer: %s\n", e.what());
  }
  return 0;
}
