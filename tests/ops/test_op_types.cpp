// tests/ops/test_op_types.cpp — the fused ops' element types (src/ops/common/op_types.h): what a desc resolves
// to, the GEMM core's rules applied under the op's name, and the checks of a call's FP8 scale tensors.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "flux/error.h"
#include "src/ops/common/op_types.h"

namespace {

using flux::DType;
using flux::ScaleKind;
using flux::TensorRef;
using flux::WeightLayout;
using flux::ops::OpTypes;
using flux::ops::resolve_op_types;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const flux::InvalidArgument& e) {
    return e.what();
  }
  return "";
}

// Device addresses are never dereferenced by the checks: fake ones with chosen alignment.
const void* at(uintptr_t address) { return reinterpret_cast<const void*>(address); }

TEST(OpTypes, SixteenBitInputsWriteTheirOwnTypeAndTakeNoScales) {
  const OpTypes t = resolve_op_types("flux gemm_rs", DType::kFP16, WeightLayout::kKN, DType::kBF16, ScaleKind::kNone, 256, 128);
  EXPECT_EQ(t.in, DType::kFP16);
  EXPECT_EQ(t.out, DType::kFP16);  // out_dtype is not read for 16-bit inputs
  EXPECT_FALSE(t.fp8());
  EXPECT_EQ(t.in_bytes(), 2u);
  EXPECT_EQ(t.describe(), "fp16 kn");
  const flux::GemmDesc core = t.core(256, 128);
  EXPECT_EQ(core.n, 256);
  EXPECT_EQ(core.k, 128);
  EXPECT_EQ(core.layout, WeightLayout::kKN);
}

TEST(OpTypes, Fp8ResolvesItsOutputAndScales) {
  const OpTypes t = resolve_op_types("flux ag_gemm", DType::kE4M3, WeightLayout::kNK, DType::kFP16, ScaleKind::kPerRowCol, 264, 192);
  EXPECT_TRUE(t.fp8());
  EXPECT_TRUE(t.row_scales());
  EXPECT_EQ(t.in_bytes(), 1u);
  EXPECT_EQ(t.out_bytes(), 2u);
  EXPECT_EQ(t.describe(), "e4m3->fp16 per-row-col nk");
  const flux::GemmDesc core = t.core(264, 192);
  EXPECT_EQ(core.dtype, DType::kE4M3);
  EXPECT_EQ(core.out_dtype, DType::kFP16);
  EXPECT_EQ(core.scale, ScaleKind::kPerRowCol);
}

TEST(OpTypes, TheCoresRulesUnderTheOpsName) {
  auto resolve = [](DType in, WeightLayout layout, DType out, ScaleKind scale, int64_t k) {
    return error_of([&] { resolve_op_types("flux gemm_ar", in, layout, out, scale, 256, k); });
  };
  std::string e = resolve(DType::kE4M3, WeightLayout::kKN, DType::kBF16, ScaleKind::kPerTensor, 256);
  EXPECT_NE(e.find("flux gemm_ar: "), std::string::npos) << e;
  EXPECT_NE(e.find("[N, K]"), std::string::npos) << e;
  e = resolve(DType::kE4M3, WeightLayout::kNK, DType::kBF16, ScaleKind::kNone, 256);
  EXPECT_NE(e.find("need scales"), std::string::npos) << e;
  e = resolve(DType::kE4M3, WeightLayout::kNK, DType::kE4M3, ScaleKind::kPerTensor, 256);
  EXPECT_NE(e.find("output dtype"), std::string::npos) << e;
  e = resolve(DType::kE4M3, WeightLayout::kNK, DType::kBF16, ScaleKind::kPerTensor, 200);
  EXPECT_NE(e.find("multiple of 16"), std::string::npos) << e;
  e = resolve(DType::kBF16, WeightLayout::kNK, DType::kBF16, ScaleKind::kPerTensor, 256);
  EXPECT_NE(e.find("scales are for e4m3"), std::string::npos) << e;
  e = resolve(DType::kFP32, WeightLayout::kNK, DType::kBF16, ScaleKind::kNone, 256);
  EXPECT_NE(e.find("expected bf16, fp16, or e4m3"), std::string::npos) << e;
}

TEST(OpTypes, ScaleTensorsOfACall) {
  const OpTypes rows = resolve_op_types("op", DType::kE4M3, WeightLayout::kNK, DType::kBF16, ScaleKind::kPerRowCol, 264, 192);
  const OpTypes tensor = resolve_op_types("op", DType::kE4M3, WeightLayout::kNK, DType::kBF16, ScaleKind::kPerTensor, 264, 192);
  const OpTypes bf16 = resolve_op_types("op", DType::kBF16, WeightLayout::kNK, DType::kBF16, ScaleKind::kNone, 264, 192);
  const TensorRef sa(at(0x10000), 1, 66, DType::kFP32), sb(at(0x20000), 1, 264, DType::kFP32);
  auto check = [](const OpTypes& t, const TensorRef& a, const TensorRef& b) {
    return error_of([&] { flux::ops::check_op_scales("flux op", t, a, 66, b, 264); });
  };
  EXPECT_EQ(check(rows, sa, sb), "");
  EXPECT_EQ(check(bf16, TensorRef(), TensorRef()), "");
  // Per tensor: one value each, 4-byte alignment is enough.
  EXPECT_EQ(check(tensor, TensorRef(at(0x10004), 1, 1, DType::kFP32), TensorRef(at(0x20008), 1, 1, DType::kFP32)), "");
  std::string e = check(rows, TensorRef(at(0x10000), 1, 1, DType::kFP32), sb);
  EXPECT_NE(e.find("flux op: scale_a is 1 x 1 fp32; expected 1 x 66 fp32"), std::string::npos) << e;
  e = check(rows, sa, TensorRef(at(0x20000), 1, 256, DType::kFP32));
  EXPECT_NE(e.find("scale_b is 1 x 256 fp32; expected 1 x 264"), std::string::npos) << e;
  e = check(rows, TensorRef(at(0x10000), 1, 66, DType::kBF16), sb);
  EXPECT_NE(e.find("scale_a is 1 x 66 bf16"), std::string::npos) << e;
  e = check(rows, TensorRef(), sb);
  EXPECT_NE(e.find("e4m3 needs scale_a"), std::string::npos) << e;
  e = check(rows, TensorRef(at(0x10004), 1, 66, DType::kFP32), sb);
  EXPECT_NE(e.find("is not 16-byte aligned"), std::string::npos) << e;
  e = check(tensor, TensorRef(at(0x10002), 1, 1, DType::kFP32), TensorRef(at(0x20000), 1, 1, DType::kFP32));
  EXPECT_NE(e.find("is not 4-byte aligned"), std::string::npos) << e;
  e = check(bf16, sa, TensorRef());
  EXPECT_NE(e.find("scales are for e4m3; expected none"), std::string::npos) << e;
}

}  // namespace
