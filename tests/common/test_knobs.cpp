// tests/common/test_knobs.cpp — the knob registry: defaults, overrides, errors, and the README lists
// every knob with its default.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "flux/error.h"
#include "flux/knobs.h"

namespace {

TEST(Knobs, DefaultsAndOverrides) {
  unsetenv("FLUX_WAIT_TIMEOUT_MS");
  EXPECT_EQ(flux::knobs::get_int("FLUX_WAIT_TIMEOUT_MS"), 10000);
  setenv("FLUX_WAIT_TIMEOUT_MS", "25", 1);
  EXPECT_EQ(flux::knobs::get_int("FLUX_WAIT_TIMEOUT_MS"), 25);
  setenv("FLUX_WAIT_TIMEOUT_MS", "", 1);  // empty = default
  EXPECT_EQ(flux::knobs::get_int("FLUX_WAIT_TIMEOUT_MS"), 10000);
  unsetenv("FLUX_WAIT_TIMEOUT_MS");
  EXPECT_EQ(flux::knobs::get_string("FLUX_GEMM_CONFIG"), "auto");
}

TEST(Knobs, BadValuesAndNames) {
  setenv("FLUX_GEMM_SWIZZLE", "eight", 1);
  try {
    flux::knobs::get_int("FLUX_GEMM_SWIZZLE");
    FAIL() << "non-integer accepted";
  } catch (const flux::InvalidArgument& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("FLUX_GEMM_SWIZZLE='eight'"), std::string::npos) << what;
    EXPECT_NE(what.find("default 0"), std::string::npos) << what;
  }
  unsetenv("FLUX_GEMM_SWIZZLE");
  EXPECT_THROW(flux::knobs::get_string("FLUX_NO_SUCH_KNOB"), flux::InvalidArgument);
}

TEST(Knobs, ReadmeListsEveryKnobWithItsDefault) {
  std::ifstream in(std::string(FLUX_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(in.good()) << "README.md not found under " << FLUX_SOURCE_DIR;
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  for (const auto& knob : flux::knobs::all()) {
    // A table row: | `NAME` | `default` | meaning |   (an empty default is written "(empty)")
    std::string value = *knob.default_value ? std::string("`") + knob.default_value + "`" : std::string("(empty)");
    std::string row = std::string("| `") + knob.name + "` | " + value + " |";
    EXPECT_NE(readme.find(row), std::string::npos) << "README.md has no row starting " << row;
  }
}

}  // namespace
