// tests/runtime/test_runtime_gpu.cpp — the runtime on the GPU: W ranks as W processes on the GPUs
// present (several per GPU), time-sliced and under a private MPS daemon; each rank runs
// flux_runtime_gpu_probe (heap all-to-all, ping-pong, device barrier, stream signals, the timeout
// errors, 1000 allocate/free cycles, NCCL's reason). Skips with a message without an sm_90 GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/support/gpu_support.h"
#include "tests/support/process.h"

namespace {

void run_job(int world, bool mps) {
  const std::string launcher = flux::testing::sibling_binary("flux-run", FLUX_RUN_PATH);
  const std::string probe = flux::testing::sibling_binary("flux_runtime_gpu_probe", FLUX_RUNTIME_GPU_PROBE_PATH);
  std::vector<std::string> argv = {launcher, "-n", std::to_string(world), "--timeout", "240"};
  if (mps) argv.push_back("--mps");
  argv.push_back("--");
  argv.push_back(probe);
  auto r = flux::testing::run_process(argv, {{"FLUX_WAIT_TIMEOUT_MS", "2000"}, {"FLUX_RDZV_TIMEOUT_MS", "60000"}}, 300);
  ASSERT_EQ(r.exit_code, 0) << "W=" << world << (mps ? " MPS" : " time-sliced") << "\n" << r.output;
  for (int rank = 0; rank < world; ++rank) {
    EXPECT_NE(r.output.find("probe PASSED: rank " + std::to_string(rank) + " of " + std::to_string(world)),
              std::string::npos)
        << r.output;
  }
  std::printf("%s", r.output.c_str());
}

class RuntimeGpu : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(RuntimeGpu, ProbeJob) {
  FLUX_REQUIRE_GPU();
  auto [world, mps] = GetParam();
  if (mps && std::system("command -v nvidia-cuda-mps-control > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "MPS test skipped: nvidia-cuda-mps-control is not on PATH";
  }
  run_job(world, mps);
}

INSTANTIATE_TEST_SUITE_P(WorldsAndMps, RuntimeGpu,
                         ::testing::Combine(::testing::Values(2, 3, 4, 8), ::testing::Values(false, true)),
                         [](const auto& param_info) {
                           return "W" + std::to_string(std::get<0>(param_info.param)) +
                                  (std::get<1>(param_info.param) ? "_mps" : "_timesliced");
                         });

}  // namespace
