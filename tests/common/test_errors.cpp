// tests/common/test_errors.cpp — error texts: device wait records, dtype / layout parsing.
#include <gtest/gtest.h>

#include <string>

#include "flux/device_status.h"
#include "flux/error.h"
#include "flux/types.h"

namespace {

TEST(Errors, DeviceStatusTextNamesTheWait) {
  flux::DeviceStatus s{};
  EXPECT_EQ(flux::describe_device_status(s), "");
  s.failed = static_cast<uint32_t>(flux::WaitSite::kGemmWaitBeforeLoad);
  s.index = 7;
  s.expected = 3;
  s.seen = 2;
  s.rank = 1;
  s.peer = 0;
  s.waited_ns = 50000000;
  s.flag_addr = 0x7f0000001000ull;
  std::string text = flux::describe_device_status(s);
  EXPECT_NE(text.find("M-block 7"), std::string::npos) << text;
  EXPECT_NE(text.find("expected >= 3"), std::string::npos) << text;
  EXPECT_NE(text.find("last seen 2"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
  EXPECT_NE(text.find("peer 0"), std::string::npos) << text;
  EXPECT_NE(text.find("0x7f0000001000"), std::string::npos) << text;
  EXPECT_NE(text.find("50 ms"), std::string::npos) << text;

  s.failed = static_cast<uint32_t>(flux::WaitSite::kSignalWait);
  text = flux::describe_device_status(s);
  EXPECT_NE(text.find("rank 1 timed out"), std::string::npos) << text;
  EXPECT_NE(text.find("peer 0 on signal 7"), std::string::npos) << text;

  s.failed = static_cast<uint32_t>(flux::WaitSite::kGemmStreamKFixup);
  text = flux::describe_device_status(s);
  EXPECT_NE(text.find("stream-K fixup timed out"), std::string::npos) << text;
  EXPECT_NE(text.find("slot 7"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
}

TEST(Errors, ParseDtypeAndLayout) {
  EXPECT_EQ(flux::parse_dtype("bf16"), flux::DType::kBF16);
  EXPECT_EQ(flux::parse_dtype("fp16"), flux::DType::kFP16);
  try {
    flux::parse_dtype("fp32");
    FAIL();
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("expected bf16, fp16 or e4m3"), std::string::npos);
  }
  EXPECT_EQ(flux::parse_weight_layout("kn"), flux::WeightLayout::kKN);
  EXPECT_THROW(flux::parse_weight_layout("tn"), flux::InvalidArgument);
  EXPECT_STREQ(flux::to_string(flux::DType::kFP16), "fp16");
  EXPECT_STREQ(flux::to_string(flux::WeightLayout::kNK), "nk");
}

}  // namespace
