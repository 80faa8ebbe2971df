// tests/tools/test_json.cpp — the benchmark's JSON lines and option parsing (CPU only).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "flux/error.h"
#include "tools/bench/bench_args.h"
#include "tools/common/json.h"
#include "tools/common/timing.h"

namespace {

TEST(BenchJson, LineHasKeysInOrderAndEscapes) {
  flux::tools::JsonLine line;
  line.add("op", "gemm").add("impl", "flux").add("m", int64_t(1024)).add("median_ms", 0.5).add("max_rel_err", NAN)
      .add("ok", true).add("command", "flux-bench gemm --shapes \"1x8x8\"\n");
  EXPECT_EQ(line.str(),
            "{\"op\": \"gemm\", \"impl\": \"flux\", \"m\": 1024, \"median_ms\": 0.5, \"max_rel_err\": null, "
            "\"ok\": true, \"command\": \"flux-bench gemm --shapes \\\"1x8x8\\\"\\n\"}");
  flux::tools::JsonLine empty;
  EXPECT_EQ(empty.str(), "{}");
  flux::tools::JsonLine opt;
  opt.add("a", std::optional<double>()).add("b", std::optional<double>(2.0));
  EXPECT_EQ(opt.str(), "{\"a\": null, \"b\": 2}");
  EXPECT_EQ(flux::tools::json_escape(std::string("\x01", 1)), "\\u0001");
}

TEST(BenchJson, Percentiles) {
  std::vector<float> v = {5, 1, 4, 2, 3};
  EXPECT_DOUBLE_EQ(flux::tools::median(v), 3.0);
  EXPECT_DOUBLE_EQ(flux::tools::percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(flux::tools::percentile(v, 100), 5.0);
  EXPECT_DOUBLE_EQ(flux::tools::percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_TRUE(std::isnan(flux::tools::median({})));
  EXPECT_EQ(flux::tools::utc_now_iso8601().size(), 20u);
}

TEST(BenchArgs, ParsesAndRejects) {
  flux::bench::Args args({"--iters", "25", "--sweep", "--dtypes", "bf16,fp16"}, {"--iters", "--dtypes"}, {"--sweep"});
  EXPECT_EQ(args.get_int("--iters", 30), 25);
  EXPECT_TRUE(args.flag("--sweep"));
  EXPECT_EQ(args.get_list("--dtypes", "").size(), 2u);
  EXPECT_EQ(args.get("--missing", "x"), "x");
  EXPECT_THROW(flux::bench::Args({"--bogus"}, {"--iters"}, {}), flux::InvalidArgument);
  EXPECT_THROW(flux::bench::Args({"--iters"}, {"--iters"}, {}), flux::InvalidArgument);
  flux::bench::Shape s = flux::bench::parse_shape("4096x6144x12288");
  EXPECT_EQ(s.m, 4096);
  EXPECT_EQ(s.n, 6144);
  EXPECT_EQ(s.k, 12288);
  EXPECT_THROW(flux::bench::parse_shape("4096x6144"), flux::InvalidArgument);
  EXPECT_THROW(flux::bench::parse_shape("4096x6144x12288x1"), flux::InvalidArgument);
  EXPECT_THROW(flux::bench::parse_shape("-1x8x8"), flux::InvalidArgument);
}

}  // namespace
