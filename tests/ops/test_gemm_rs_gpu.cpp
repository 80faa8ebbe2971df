// tests/ops/test_gemm_rs_gpu.cpp — GEMM+RS on the GPU: W in {1, 2, 3, 4, 8} ranks as processes on the
// GPUs present under MPS, and W = 2 time-sliced; each rank runs gemm_rs_probe (correctness of every
// path against fp64 from every rank's inputs, determinism, 1000 back-to-back calls, bad inputs).
// Also: CUDA-graph capture / replay of every path (W = 1, 2, 4, 8), the 32-bit epoch wrap, fail-stop
// after a rank misses a call, and a rank SIGKILLed in a job started without flux-run.
// Skips with a message without an sm_90 GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/gpu_support.h"
#include "tests/support/process.h"

namespace {


class GemmRsGpu : public ::testing::TestWithParam<std::tuple<int, bool, std::string>> {};

TEST_P(GemmRsGpu, ProbeJob) {
  FLUX_REQUIRE_GPU();
  auto [world, mps, mode] = GetParam();
  // The fault job waits for a peer that never comes: a short timeout keeps it quick.
  const std::string timeout = mode == "fault" ? "1500" : "20000";
  flux::testing::run_probe_job(flux::testing::sibling_binary("flux_gemm_rs_probe", FLUX_GEMM_RS_PROBE_PATH), world, mps, mode,
                               "gemm_rs probe", {{"FLUX_WAIT_TIMEOUT_MS", timeout}, {"FLUX_RDZV_TIMEOUT_MS", "120000"}});
}

// A rank SIGKILLed in the middle of 1000 fused calls, in a job started without flux-run (torchrun-style
// variables only, no launcher to stop the others): every other rank must stop within 2x the wait
// timeout of the death, with an error naming the dead rank.
TEST(GemmRsGpuFaults, KilledRankStopsEveryOtherRankWithItsName) {
  FLUX_REQUIRE_GPU();
  const int world = 3;
  const double timeout_ms = 2000;
  const std::string probe = flux::testing::sibling_binary("flux_gemm_rs_probe", FLUX_GEMM_RS_PROBE_PATH);
  const std::string port = std::to_string(flux::testing::free_tcp_port());
  std::vector<std::vector<std::string>> argvs;
  std::vector<std::vector<std::pair<std::string, std::string>>> envs;
  for (int r = 0; r < world; ++r) {
    argvs.push_back({probe, "kill"});
    envs.push_back({{"RANK", std::to_string(r)}, {"WORLD_SIZE", std::to_string(world)}, {"LOCAL_RANK", std::to_string(r)},
                    {"LOCAL_WORLD_SIZE", std::to_string(world)}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port},
                    {"FLUX_RDZV_TOKEN", "kill-test-" + port}, {"FLUX_DEVICE", "0"},
                    {"FLUX_WAIT_TIMEOUT_MS", std::to_string(int(timeout_ms))}, {"FLUX_RDZV_TIMEOUT_MS", "60000"}});
  }
  std::vector<flux::testing::ProcessResult> results = flux::testing::run_processes(argvs, envs, 300);
  auto stamp = [](const std::string& out, const std::string& key) -> long long {
    size_t at = out.find(key);
    return at == std::string::npos ? -1 : std::atoll(out.c_str() + at + key.size());
  };
  const long long killed_at = stamp(results[world - 1].output, "killing myself at ");
  ASSERT_GT(killed_at, 0) << "the last rank did not reach call 300:\n" << results[world - 1].output;
  EXPECT_EQ(results[world - 1].exit_code, 128 + 9) << results[world - 1].output;
  for (int r = 0; r + 1 < world; ++r) {
    const std::string& out = results[r].output;
    EXPECT_EQ(results[r].exit_code, 3) << "rank " << r << ":\n" << out;
    const long long stopped_at = stamp(out, "stopped at ");
    ASSERT_GT(stopped_at, 0) << "rank " << r << " did not stop with an error:\n" << out;
    EXPECT_LT(double(stopped_at - killed_at), 2 * timeout_ms) << "rank " << r << " took too long to stop:\n" << out;
    EXPECT_NE(out.find("peer " + std::to_string(world - 1)), std::string::npos)
        << "rank " << r << "'s error does not name the dead rank " << world - 1 << ":\n" << out;
    std::printf("rank %d: %s", r, out.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Jobs, GemmRsGpu,
    ::testing::Values(std::make_tuple(1, false, std::string("correctness")), std::make_tuple(2, true, std::string("correctness")),
                      std::make_tuple(3, true, std::string("correctness")), std::make_tuple(4, true, std::string("correctness")),
                      std::make_tuple(8, true, std::string("correctness")), std::make_tuple(2, false, std::string("correctness")),
                      std::make_tuple(2, true, std::string("determinism")), std::make_tuple(4, true, std::string("determinism")),
                      std::make_tuple(2, true, std::string("loop")), std::make_tuple(4, true, std::string("loop")),
                      std::make_tuple(3, true, std::string("bad")), std::make_tuple(1, false, std::string("graph")),
                      std::make_tuple(2, true, std::string("graph")), std::make_tuple(4, true, std::string("graph")),
                      std::make_tuple(8, true, std::string("graph")), std::make_tuple(2, false, std::string("graph_small")),
                      std::make_tuple(2, true, std::string("wrap")), std::make_tuple(3, true, std::string("wrap")),
                      std::make_tuple(2, true, std::string("fault")), std::make_tuple(3, true, std::string("fault")),
                      std::make_tuple(2, true, std::string("correctness_chaos")),
                      std::make_tuple(4, true, std::string("correctness_chaos")),
                      std::make_tuple(2, true, std::string("loop_chaos")), std::make_tuple(4, true, std::string("loop_chaos")),
                      std::make_tuple(2, true, std::string("graph_chaos")),
                      std::make_tuple(2, false, std::string("correctness_chaos"))),
    [](const auto& param_info) {
      return "W" + std::to_string(std::get<0>(param_info.param)) + (std::get<1>(param_info.param) ? "_mps_" : "_timesliced_") +
             std::get<2>(param_info.param);
    });

}  // namespace
