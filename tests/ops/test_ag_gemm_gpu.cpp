// tests/ops/test_ag_gemm_gpu.cpp — AG+GEMM on the GPU: W in {1, 2, 3, 4, 8} ranks as processes on the
// GPUs present under MPS, and W = 2 time-sliced; each rank runs ag_gemm_probe (correctness of every
// path that runs here and the gathered A, 1000 calls interleaved with GEMM+RS, bad inputs).
// Skips with a message without an sm_90 GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <tuple>

#include "tests/support/gpu_support.h"
#include "tests/support/process.h"

namespace {

void run_probe(int world, bool mps, const std::string& mode) {
  const std::string launcher = flux::testing::sibling_binary("flux-run", FLUX_RUN_PATH);
  const std::string probe = flux::testing::sibling_binary("flux_ag_gemm_probe", FLUX_AG_GEMM_PROBE_PATH);
  std::vector<std::string> argv = {launcher, "-n", std::to_string(world), "--timeout", "400"};
  if (mps) argv.push_back("--mps");
  argv.insert(argv.end(), {"--", probe, mode});
  auto r = flux::testing::run_process(argv, {{"FLUX_WAIT_TIMEOUT_MS", "20000"}, {"FLUX_RDZV_TIMEOUT_MS", "120000"}}, 450);
  ASSERT_EQ(r.exit_code, 0) << "W=" << world << (mps ? " MPS " : " time-sliced ") << mode << "\n" << r.output;
  for (int rank = 0; rank < world; ++rank) {
    EXPECT_NE(r.output.find("ag_gemm probe PASSED: rank " + std::to_string(rank) + " of " + std::to_string(world)),
              std::string::npos)
        << r.output;
  }
  std::printf("%s", r.output.c_str());
}

class AgGemmGpu : public ::testing::TestWithParam<std::tuple<int, bool, std::string>> {};

TEST_P(AgGemmGpu, ProbeJob) {
  FLUX_REQUIRE_GPU();
  auto [world, mps, mode] = GetParam();
  if (mps && std::system("command -v nvidia-cuda-mps-control > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "MPS test skipped: nvidia-cuda-mps-control is not on PATH";
  }
  run_probe(world, mps, mode);
}

INSTANTIATE_TEST_SUITE_P(
    Jobs, AgGemmGpu,
    ::testing::Values(std::make_tuple(1, false, std::string("correctness")), std::make_tuple(2, true, std::string("correctness")),
                      std::make_tuple(3, true, std::string("correctness")), std::make_tuple(4, true, std::string("correctness")),
                      std::make_tuple(8, true, std::string("correctness")), std::make_tuple(2, false, std::string("correctness")),
                      std::make_tuple(2, true, std::string("loop")), std::make_tuple(4, true, std::string("loop")),
                      std::make_tuple(3, true, std::string("bad"))),
    [](const auto& param_info) {
      return "W" + std::to_string(std::get<0>(param_info.param)) + (std::get<1>(param_info.param) ? "_mps_" : "_timesliced_") +
             std::get<2>(param_info.param);
    });

}  // namespace
