// tests/common/test_knobs.cpp — the knob registry: defaults, overrides, errors, retired knobs refused, and the
// README lists every knob with its default and every retired one.
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

TEST(Knobs, RetiredKnobsAreRefusedNotIgnored) {
  ASSERT_FALSE(flux::knobs::retired().empty());
  for (const auto& knob : flux::knobs::retired()) {
    unsetenv(knob.name);
    EXPECT_NO_THROW(flux::knobs::reject_retired()) << knob.name;
    setenv(knob.name, "", 1);  // empty = unset, as for live knobs
    EXPECT_NO_THROW(flux::knobs::reject_retired()) << knob.name;
    setenv(knob.name, "16", 1);
    try {
      flux::knobs::reject_retired();
      ADD_FAILURE() << knob.name << "=16 accepted";
    } catch (const flux::InvalidArgument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string(knob.name) + "='16' was retired"), std::string::npos) << what;
      EXPECT_NE(what.find(knob.replaced_by), std::string::npos) << what;
    }
    unsetenv(knob.name);
    // A retired name is no longer a registered knob.
    EXPECT_THROW(flux::knobs::get_string(knob.name), flux::InvalidArgument) << knob.name;
  }
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
  for (const auto& knob : flux::knobs::retired()) {
    const std::string row = std::string("| `") + knob.name + "` | ";
    EXPECT_NE(readme.find(row), std::string::npos) << "README.md's retired knobs have no row starting " << row;
  }
}

}  // namespace
