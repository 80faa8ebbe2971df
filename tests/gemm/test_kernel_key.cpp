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
  // Parsing accepts what the library runs (bf16, fp16, e4m3 / fp8) and names them otherwise.
  EXPECT_EQ(flux::parse_dtype("e4m3"), DType::kE4M3);
  EXPECT_EQ(flux::parse_dtype("fp8"), DType::kE4M3);
  try {
    flux::parse_dtype("e5m2");
    FAIL() << "e5m2 parsed: no kernel takes it";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("expected bf16, fp16 or e4m3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(flux::parse_scale_kind("per-row-col"), flux::ScaleKind::kPerRowCol);
  EXPECT_STREQ(flux::to_string(flux::ScaleKind::kPerTensor), "per-tensor");
  EXPECT_THROW(flux::parse_scale_kind("rowwise"), flux::InvalidArgument);
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
        const bool compiled = !c.fp8 && (!c.skinny || l == WeightLayout::kNK);
        EXPECT_EQ(flux::gemm::has_kernel(flux::gemm::core_kernel_key(d, l, c.id, GemmOutput::kFinal)), compiled)
            << c.name;
        EXPECT_EQ(flux::gemm::has_kernel(flux::gemm::core_kernel_key(d, l, c.id, GemmOutput::kPartial)),
                  compiled && c.split_k)
            << c.name;
        EXPECT_EQ(flux::gemm_config_compiled(flux::gemm_configs()[static_cast<size_t>(c.id)], d, l), compiled) << c.name;
      }
    }
    // FP8: the e4m3 configs, [N, K] weights, both output types and both scale kinds; one fp32 partial kernel for the
    // split-K ones (the skinny FP8 config), whatever the output type and scales.
    for (WeightLayout l : {WeightLayout::kNK, WeightLayout::kKN}) {
      const bool compiled = c.fp8 && l == WeightLayout::kNK;
      for (DType out : {DType::kBF16, DType::kFP16}) {
        for (flux::ScaleKind s : {flux::ScaleKind::kPerTensor, flux::ScaleKind::kPerRowCol}) {
          EXPECT_EQ(flux::gemm::has_kernel(flux::gemm::fp8_kernel_key(out, s, l, c.id)), compiled) << c.name;
        }
        EXPECT_FALSE(flux::gemm::has_kernel(flux::gemm::fp8_kernel_key(out, flux::ScaleKind::kNone, l, c.id)));
      }
      EXPECT_EQ(flux::gemm_config_compiled(flux::gemm_configs()[static_cast<size_t>(c.id)], DType::kE4M3, l), compiled)
          << c.name;
      EXPECT_EQ(flux::gemm::has_kernel(flux::gemm::fp8_partial_kernel_key(l, c.id)), compiled && c.split_k) << c.name;
      EXPECT_FALSE(flux::gemm::has_kernel(flux::gemm::core_kernel_key(DType::kE4M3, l, c.id, GemmOutput::kFinal)));
    }
  }
}

// The key of a plan's kernel: FP8 descs name their output type and scale kind.
TEST(KernelKey, PlanKeysFollowTheDesc) {
  flux::GemmDesc d{1024, 1024, DType::kE4M3, WeightLayout::kNK, DType::kFP16, flux::ScaleKind::kPerRowCol};
  auto key = flux::gemm::kernel_key(d, flux::gemm::ConfigId::k128x128x128CoopC2x1E4m3, GemmOutput::kFinal);
  EXPECT_EQ(flux::gemm::to_string(key), "a=e4m3 b=e4m3 out=fp16 acc=fp32 scale=per-row-col layout=nk "
                                        "config=128x128x128_coop_c2x1_e4m3 output=final");
  EXPECT_TRUE(flux::gemm::has_kernel(key));
  key = flux::gemm::kernel_key(d, flux::gemm::ConfigId::k16x64x256SkinnyE4m3, GemmOutput::kPartial);
  EXPECT_EQ(flux::gemm::to_string(key), "a=e4m3 b=e4m3 out=fp32 acc=fp32 scale=none layout=nk "
                                        "config=16x64x256_skinny_e4m3 output=partial");
  EXPECT_TRUE(flux::gemm::has_kernel(key));
  d = flux::GemmDesc{1024, 1024, DType::kBF16, WeightLayout::kKN};
  key = flux::gemm::kernel_key(d, flux::gemm::ConfigId::k128x128x64PingpongC1x2, GemmOutput::kPartial);
  EXPECT_EQ(key.out, DType::kFP32);
  EXPECT_EQ(key.scale, flux::ScaleKind::kNone);
}

TEST(KernelKey, AMissingKernelIsUnsupportedAndNamed) {
  auto key = flux::gemm::core_kernel_key(DType::kE4M3, WeightLayout::kNK, flux::gemm::ConfigId::k128x128x64PingpongC1x2,
                                         GemmOutput::kFinal);
  EXPECT_FALSE(flux::gemm::has_kernel(key));
  try {
    flux::gemm::prepare_kernel(key, 0);
    FAIL() << "a kernel that is not compiled was found";
  } catch (const flux::Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("a=e4m3 b=e4m3 out=e4m3"), std::string::npos) << e.what();
  }
  try {
    flux::gemm::launch_kernel(flux::gemm::core_kernel_key(DType::kBF16, WeightLayout::kNK,
                                                          flux::gemm::ConfigId::k128x256x64CoopC2x1, GemmOutput::kPartial),
                              flux::gemm::KernelLaunch{}, nullptr);
    FAIL() << "a partial-output kernel of a config without split-K was found";
  } catch (const flux::Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("config=128x256x64_coop_c2x1 output=partial"), std::string::npos) << e.what();
  }
}

// FP8 descs: scales required, the output type bf16 / fp16, [N, K] weights, K a multiple of 16; 16-bit
// descs take no scales.
TEST(KernelKey, ThePlanChecksFp8Descs) {
  auto error = [](const flux::GemmDesc& d) {
    try {
      flux::validate_gemm_desc(d);
    } catch (const flux::InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error({256, 256, DType::kE4M3, WeightLayout::kNK, DType::kBF16, flux::ScaleKind::kPerTensor}), "");
  EXPECT_NE(error({256, 256, DType::kE4M3, WeightLayout::kNK}).find("e4m3 inputs need scales"), std::string::npos);
  EXPECT_NE(error({256, 256, DType::kE4M3, WeightLayout::kKN, DType::kBF16, flux::ScaleKind::kPerTensor})
                .find("[N, K] (layout nk)"),
            std::string::npos);
  EXPECT_NE(error({256, 264, DType::kE4M3, WeightLayout::kNK, DType::kBF16, flux::ScaleKind::kPerTensor})
                .find("K multiple of 16"),
            std::string::npos);
  EXPECT_NE(error({256, 256, DType::kE4M3, WeightLayout::kNK, DType::kE4M3, flux::ScaleKind::kPerTensor})
                .find("output dtype e4m3"),
            std::string::npos);
  EXPECT_NE(error({256, 256, DType::kBF16, WeightLayout::kNK, DType::kBF16, flux::ScaleKind::kPerTensor})
                .find("scales are for e4m3"),
            std::string::npos);
  EXPECT_NE(error({256, 256, DType::kFP32, WeightLayout::kNK}).find("dtype fp32 is not supported"), std::string::npos);
}

}  // namespace
