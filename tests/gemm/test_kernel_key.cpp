// tests/gemm/test_kernel_key.cpp — the kernel key and the manifest-built dispatch table (CPU only: no
// kernel is launched; a missing key is refused before any CUDA call).
#include <gtest/gtest.h>

#include <string>

#include "flux/error.h"
#include "flux/gemm.h"
#include "src/gemm/gemm_config.h"
#include "src/gemm/gemm_launch.h"
#include "src/gemm/kernel_key.h"

namespace {

using flux::DType;
using flux::WeightLayout;
using flux::gemm::GemmOutput;

TEST(KernelKey, DtypeSizesAndNames) {
  EXPECT_EQ(flux::dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(flux::dtype_size(DType::kFP16), 2u);
  EXPECT_EQ(flux::dtype_size(DType::kE4M3), 1u);
  EXPECT_EQ(flux::dtype_size(DType::kFP32), 4u);
  EXPECT_STREQ(flux::to_string(DType::kE4M3), "e4m3");
  EXPECT_STREQ(flux::to_string(DType::kFP32), "fp32");
  // Parsing accepts only what the library runs (bf16, fp16) and says so.
  try {
    flux::parse_dtype("e4m3");
    FAIL() << "e4m3 parsed before any FP8 kernel exists";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("expected bf16 or fp16"), std::string::npos) << e.what();
  }
}

TEST(KernelKey, CoreKeysSayWhatTheKernelIs) {
  auto key = flux::gemm::core_kernel_key(DType::kFP16, WeightLayout::kKN, flux::gemm::ConfigId::k64x256x64PingpongC1x2,
                                         GemmOutput::kPartial);
  EXPECT_EQ(key.a, DType::kFP16);
  EXPECT_EQ(key.b, DType::kFP16);
  EXPECT_EQ(key.out, DType::kFP32);  // split-K partials
  EXPECT_EQ(key.acc, DType::kFP32);
  EXPECT_EQ(flux::gemm::to_string(key),
            "a=fp16 b=fp16 out=fp32 acc=fp32 scale=none layout=kn config=64x256x64_pingpong_c1x2 output=partial");
}

// The manifest (cmake/FluxInstantiations.cmake) and the config table (src/gemm/gemm_config.h) agree: every
// config has its 16-bit kernels for both layouts (the skinny configs: [N, K] weights only), and split-K
// partial kernels exactly when split_k; gemm_config_compiled() says the same.
TEST(KernelKey, TheManifestMatchesTheConfigTable) {
  for (const auto& c : flux::gemm::kConfigShapes) {
    for (DType d : {DType::kBF16, DType::kFP16}) {
      for (WeightLayout l : {WeightLayout::kNK, WeightLayout::kKN}) {
        const bool compiled = !c.skinny || l == WeightLayout::kNK;
        EXPECT_EQ(flux::gemm::has_kernel(flux::gemm::core_kernel_key(d, l, c.id, GemmOutput::kFinal)), compiled)
            << c.name;
        EXPECT_EQ(flux::gemm::has_kernel(flux::gemm::core_kernel_key(d, l, c.id, GemmOutput::kPartial)),
                  compiled && c.split_k)
            << c.name;
        EXPECT_EQ(flux::gemm_config_compiled(flux::gemm_configs()[static_cast<size_t>(c.id)], d, l), compiled) << c.name;
      }
    }
  }
}

TEST(KernelKey, AMissingKernelIsUnsupportedAndNamed) {
  auto key = flux::gemm::core_kernel_key(DType::kE4M3, WeightLayout::kNK, flux::gemm::ConfigId::k128x128x64PingpongC1x2,
                                         GemmOutput::kFinal);
  EXPECT_FALSE(flux::gemm::has_kernel(key));
  try {
    flux::gemm::prepare_kernel(DType::kE4M3, WeightLayout::kNK, flux::gemm::ConfigId::k128x128x64PingpongC1x2,
                               GemmOutput::kFinal, 0);
    FAIL() << "a kernel that is not compiled was found";
  } catch (const flux::Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("a=e4m3 b=e4m3 out=e4m3"), std::string::npos) << e.what();
  }
  try {
    flux::gemm::launch_kernel(DType::kBF16, WeightLayout::kNK, flux::gemm::ConfigId::k128x256x64CoopC2x1,
                              GemmOutput::kPartial, flux::gemm::KernelLaunch{}, nullptr);
    FAIL() << "a partial-output kernel of a config without split-K was found";
  } catch (const flux::Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("config=128x256x64_coop_c2x1 output=partial"), std::string::npos) << e.what();
  }
}

TEST(KernelKey, ThePlanRefusesOtherDtypesByName) {
  try {
    flux::validate_gemm_desc(flux::GemmDesc{256, 256, DType::kE4M3, WeightLayout::kNK});
    FAIL() << "an e4m3 GEMM was accepted";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("dtype e4m3 is not supported"), std::string::npos) << e.what();
  }
}

}  // namespace
