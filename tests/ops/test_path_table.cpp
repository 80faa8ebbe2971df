// tests/ops/test_path_table.cpp — a fused op's path table and run table (src/ops/common/path_table.h): names
// and parse, `supported` (W = 1 always, null entries always, the entry's reason), a forced path refused with
// that reason, the rule taken for auto, and the run table dispatching to the resolved path's member.
#include <gtest/gtest.h>

#include <string>

#include "flux/error.h"
#include "src/ops/common/path_table.h"

namespace {

using flux::ops::PathCall;

enum class Path { kAuto, kA, kB };

bool b_supported(const PathCall& call, std::string* why) {
  if (call.m % 2 == 0) return true;
  if (why) *why = "b needs an even M, M = " + std::to_string(call.m);
  return false;
}

const flux::ops::PathEntry<Path> kTable[] = {{Path::kAuto, "auto"}, {Path::kA, "a"}, {Path::kB, "b", b_supported}};

TEST(PathTable, NamesAndParse) {
  EXPECT_STREQ(flux::ops::path_name(kTable, Path::kB), "b");
  EXPECT_EQ(flux::ops::parse_path(kTable, "a", "flux op", "path"), Path::kA);
  try {
    flux::ops::parse_path(kTable, "c", "flux op", "path");
    FAIL() << "unknown name accepted";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "flux op: unknown path 'c' (expected auto, a or b)");
  }
}

TEST(PathTable, SupportedAndResolve) {
  std::string why;
  EXPECT_TRUE(flux::ops::path_supported(kTable, Path::kA, PathCall{3, 2, false}, &why));   // no entry: always
  EXPECT_FALSE(flux::ops::path_supported(kTable, Path::kB, PathCall{3, 2, false}, &why));
  EXPECT_EQ(why, "b needs an even M, M = 3");
  EXPECT_TRUE(flux::ops::path_supported(kTable, Path::kB, PathCall{4, 2, false}, nullptr));
  EXPECT_TRUE(flux::ops::path_supported(kTable, Path::kB, PathCall{3, 1, false}, nullptr));  // W = 1: the GEMM alone

  int rule_calls = 0;
  const auto rule = [&] {
    ++rule_calls;
    return Path::kA;
  };
  std::string reason;
  EXPECT_EQ(flux::ops::resolve_path(kTable, Path::kAuto, "KNOB", PathCall{3, 2, false}, rule, &reason), Path::kA);
  EXPECT_EQ(rule_calls, 1);
  EXPECT_EQ(flux::ops::resolve_path(kTable, Path::kB, "KNOB", PathCall{4, 2, false}, rule, &reason), Path::kB);
  EXPECT_EQ(reason, "forced b (KNOB)");
  try {
    flux::ops::resolve_path(kTable, Path::kB, "KNOB", PathCall{3, 2, false}, rule, &reason);
    FAIL() << "a forced path the call cannot take was accepted";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "b needs an even M, M = 3");
  }
  EXPECT_EQ(rule_calls, 1);
}

struct Op {
  std::string ran;
  void run_a(int x) { ran = "a" + std::to_string(x); }
  void run_b(int x) { ran = "b" + std::to_string(x); }
};

TEST(PathTable, RunTableDispatches) {
  using OpRun = void (Op::*)(int);
  static constexpr flux::ops::PathRun<Path, OpRun> kRuns[] = {{Path::kA, &Op::run_a}, {Path::kB, &Op::run_b}};
  Op op;
  flux::ops::run_path(kRuns, Path::kB, "flux op", op, 7);
  EXPECT_EQ(op.ran, "b7");
  flux::ops::run_path(kRuns, Path::kA, "flux op", op, 1);
  EXPECT_EQ(op.ran, "a1");
  EXPECT_THROW(flux::ops::run_path(kRuns, Path::kAuto, "flux op", op, 1), flux::Error);  // never resolved
}

}  // namespace
