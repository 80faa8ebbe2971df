// tests/gemm/test_gemm_validate.cpp — argument validation of the GEMM core (CPU only: no pointer is
// dereferenced, nothing is launched).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "flux/gemm.h"

namespace {

// Fake device addresses: validation only looks at their values.
const void* addr(uintptr_t v) { return reinterpret_cast<const void*>(v); }
void* maddr(uintptr_t v) { return reinterpret_cast<void*>(v); }

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const flux::InvalidArgument& e) {
    return e.what();
  }
  return "";
}

flux::GemmArgs good_args() {
  flux::GemmArgs a;
  a.m = 100;
  a.a = addr(0x10000000);
  a.b = addr(0x20000000);
  a.c = maddr(0x30000000);
  return a;
}

TEST(GemmValidate, DescShapes) {
  flux::GemmDesc d{4096, 4096, flux::DType::kBF16, flux::WeightLayout::kNK};
  EXPECT_NO_THROW(flux::validate_gemm_desc(d));
  d.k = 100;
  std::string e = error_of([&] { flux::validate_gemm_desc(d); });
  EXPECT_NE(e.find("K = 100 is not a multiple of 8"), std::string::npos) << e;
  EXPECT_NE(e.find("16 bytes"), std::string::npos) << e;
  d.k = 4096;
  d.n = 4100;
  e = error_of([&] { flux::validate_gemm_desc(d); });
  EXPECT_NE(e.find("N = 4100 is not a multiple of 8"), std::string::npos) << e;
  d.n = 0;
  EXPECT_NE(error_of([&] { flux::validate_gemm_desc(d); }).find("out of range"), std::string::npos);
  d.n = 4096;
  d.dtype = static_cast<flux::DType>(7);
  EXPECT_NE(error_of([&] { flux::validate_gemm_desc(d); }).find("expected bf16, fp16 or e4m3"), std::string::npos);
}

TEST(GemmValidate, ArgsPointersAndShapes) {
  const flux::GemmDesc d{256, 512, flux::DType::kFP16, flux::WeightLayout::kKN};
  EXPECT_NO_THROW(flux::validate_gemm_args(d, good_args()));

  auto a = good_args();
  a.m = 0;
  EXPECT_NE(error_of([&] { flux::validate_gemm_args(d, a); }).find("M = 0 is out of range"), std::string::npos);
  a = good_args();
  a.b = nullptr;
  EXPECT_NE(error_of([&] { flux::validate_gemm_args(d, a); }).find("non-null"), std::string::npos);
  a = good_args();
  a.a = addr(0x10000008);
  std::string e = error_of([&] { flux::validate_gemm_args(d, a); });
  EXPECT_NE(e.find("A = 0x10000008 is not 16-byte aligned"), std::string::npos) << e;
  a = good_args();
  a.c = maddr(0x30000004);
  EXPECT_NE(error_of([&] { flux::validate_gemm_args(d, a); }).find("C = "), std::string::npos);
  a = good_args();
  a.bias = addr(0x40000002);
  EXPECT_NE(error_of([&] { flux::validate_gemm_args(d, a); }).find("bias"), std::string::npos);
  a = good_args();
  a.c = maddr(0x10000000 + 64);  // inside A
  EXPECT_NE(error_of([&] { flux::validate_gemm_args(d, a); }).find("C overlaps A"), std::string::npos);
}

TEST(GemmValidate, Hooks) {
  const flux::GemmDesc d{256, 512, flux::DType::kBF16, flux::WeightLayout::kNK};
  auto a = good_args();
  a.publish.mode = flux::PublishMode::kTileFlag;
  EXPECT_NE(error_of([&] { flux::validate_gemm_args(d, a); }).find("needs publish flags"), std::string::npos);
  a.publish.flags = reinterpret_cast<uint32_t*>(0x50000002);
  EXPECT_NE(error_of([&] { flux::validate_gemm_args(d, a); }).find("4-byte aligned"), std::string::npos);
  a.publish.flags = reinterpret_cast<uint32_t*>(0x50000000);
  EXPECT_NO_THROW(flux::validate_gemm_args(d, a));
  a.publish.mode = flux::PublishMode::kNone;
  EXPECT_NE(error_of([&] { flux::validate_gemm_args(d, a); }).find("kNone"), std::string::npos);
  a = good_args();
  a.wait.flags = reinterpret_cast<const uint32_t*>(0x60000001);
  EXPECT_NE(error_of([&] { flux::validate_gemm_args(d, a); }).find("wait flags"), std::string::npos);
  a = good_args();
  a.publish.mode = static_cast<flux::PublishMode>(9);
  a.publish.flags = reinterpret_cast<uint32_t*>(0x50000000);
  EXPECT_NE(error_of([&] { flux::validate_gemm_args(d, a); }).find("unknown PublishMode"), std::string::npos);
}

// GemmArgs::selection (decide once): a selection the heuristic made passes for its own M; one for
// another M, a changed tile, an impossible split or an unresolved raster is refused, saying what was expected.
TEST(GemmValidate, SelectionMatchesTheCall) {
  flux::DeviceLimits limits;
  limits.cc_major = 9;
  limits.sm_count = 132;
  limits.smem_per_block_optin = 227 * 1024;
  limits.l2_bytes = 50 * 1024 * 1024;
  const flux::GemmDesc d{5120, 4096, flux::DType::kBF16, flux::WeightLayout::kNK};
  for (int64_t m : {1, 7, 64, 333, 1000, 4096}) {
    const flux::GemmSelection sel = flux::select_gemm_config(m, d.n, d.k, limits);
    EXPECT_NO_THROW(flux::validate_gemm_selection(d, m, sel)) << "M = " << m << " " << sel.config.name;
  }
  const flux::GemmSelection sel = flux::select_gemm_config(4096, d.n, d.k, limits, {}, 1);
  std::string e = error_of([&] { flux::validate_gemm_selection(d, 4096 + sel.config.tile_m, sel); });
  EXPECT_NE(e.find("tile grid"), std::string::npos) << e;
  EXPECT_NE(e.find("select(M)"), std::string::npos) << e;
  flux::GemmSelection bad = sel;
  bad.config.tile_m /= 2;
  e = error_of([&] { flux::validate_gemm_selection(d, 4096, bad); });
  EXPECT_NE(e.find("unmodified"), std::string::npos) << e;
  bad = sel;
  bad.config.id = 99;
  EXPECT_NE(error_of([&] { flux::validate_gemm_selection(d, 4096, bad); }).find("config id 99"), std::string::npos);
  bad = sel;
  bad.splits = 3;  // does not divide K = 4096
  e = error_of([&] { flux::validate_gemm_selection(d, 4096, bad); });
  EXPECT_NE(e.find("into 3"), std::string::npos) << e;
  bad = sel;
  bad.raster = flux::Raster::kAuto;
  EXPECT_NE(error_of([&] { flux::validate_gemm_selection(d, 4096, bad); }).find("resolved raster"), std::string::npos);
  // A config that cannot split, asked to.
  for (const flux::GemmConfigInfo& c : flux::gemm_configs()) {
    if (c.split_k) continue;
    bad = sel;
    bad.config = c;
    bad.tiles_m = (4096 + c.tile_m - 1) / c.tile_m;
    bad.tiles_n = (d.n + c.tile_n - 1) / c.tile_n;
    bad.splits = 2;
    e = error_of([&] { flux::validate_gemm_selection(d, 4096, bad); });
    EXPECT_NE(e.find("cannot split"), std::string::npos) << c.name << ": " << e;
    bad.splits = 1;
    EXPECT_NO_THROW(flux::validate_gemm_selection(d, 4096, bad)) << c.name;
  }
}

// FP8 scale pointers: required for e4m3 (vectors 16-byte aligned, scalars 4-byte), refused for 16-bit
// inputs; C's size (and so the overlap checks) follows the output type.
TEST(GemmValidate, Fp8ScalesAndOutputType) {
  flux::GemmDesc d{4096, 4096, flux::DType::kE4M3, flux::WeightLayout::kNK, flux::DType::kBF16,
                   flux::ScaleKind::kPerRowCol};
  flux::GemmArgs a = good_args();
  std::string e = error_of([&] { flux::validate_gemm_args(d, a); });
  EXPECT_NE(e.find("needs scale_a and scale_b (fp32 [M] and [N]"), std::string::npos) << e;
  a.scale_a = reinterpret_cast<const float*>(0x60000000);
  a.scale_b = reinterpret_cast<const float*>(0x60010004);  // 4-byte aligned only
  e = error_of([&] { flux::validate_gemm_args(d, a); });
  EXPECT_NE(e.find("16-byte aligned fp32 vectors"), std::string::npos) << e;
  a.scale_b = reinterpret_cast<const float*>(0x60010000);
  EXPECT_NO_THROW(flux::validate_gemm_args(d, a));
  d.scale = flux::ScaleKind::kPerTensor;
  a.scale_b = reinterpret_cast<const float*>(0x60010004);  // a scalar needs 4 bytes of alignment
  EXPECT_NO_THROW(flux::validate_gemm_args(d, a));
  // C (bf16, 2 bytes) right after A (1 byte per element): disjoint for e4m3, where a 2-byte A would overlap.
  a.c = reinterpret_cast<void*>(0x10000000 + 100 * 4096);
  EXPECT_NO_THROW(flux::validate_gemm_args(d, a));
  const flux::GemmDesc bf16_sized{4096, 4096, flux::DType::kBF16, flux::WeightLayout::kNK};
  flux::GemmArgs plain = a;
  plain.scale_a = plain.scale_b = nullptr;
  EXPECT_NE(error_of([&] { flux::validate_gemm_args(bf16_sized, plain); }).find("C overlaps A"), std::string::npos);
  a.c = maddr(0x30000000);
  // Scales on a bf16 plan are a mistake, said so.
  const flux::GemmDesc bf16{4096, 4096, flux::DType::kBF16, flux::WeightLayout::kNK};
  e = error_of([&] { flux::validate_gemm_args(bf16, a); });
  EXPECT_NE(e.find("scales are for e4m3"), std::string::npos) << e;
}

// A retired knob set in the environment fails every plan (first, before any device is touched: this runs
// without a GPU too), naming it.
TEST(GemmValidate, PlanRefusesRetiredKnob) {
  setenv("FLUX_GEMM_FP8_PROMOTION", "64", 1);
  const std::string e = error_of([] {
    flux::GemmPlan plan(flux::GemmDesc{256, 256, flux::DType::kE4M3, flux::WeightLayout::kNK, flux::DType::kBF16,
                                           flux::ScaleKind::kPerTensor});
  });
  unsetenv("FLUX_GEMM_FP8_PROMOTION");
  EXPECT_NE(e.find("FLUX_GEMM_FP8_PROMOTION='64' was retired"), std::string::npos) << e;
}

TEST(GemmValidate, PlanWithoutGpuSaysSo) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
    GTEST_SKIP() << "a GPU is present; this test checks the no-GPU error path";
  }
  (void)cudaGetLastError();
  try {
    flux::GemmPlan plan(flux::GemmDesc{256, 256, flux::DType::kBF16, flux::WeightLayout::kNK});
    FAIL() << "GemmPlan constructed without a GPU";
  } catch (const flux::Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
}

}  // namespace
