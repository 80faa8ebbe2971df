// tests/runtime/test_runtime_gpu.cpp — the runtime on the GPU: W ranks as W processes on the GPUs
// present (several per GPU), time-sliced and under a private MPS daemon; each rank runs
// flux_runtime_gpu_probe (heap all-to-all, ping-pong, device barrier, stream signals, the timeout
// errors, 1000 allocate/free cycles, NCCL's reason). Skips with a message without an sm_90 GPU.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/gpu_support.h"
#include "tests/support/process.h"

namespace {

class RuntimeGpu : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(RuntimeGpu, ProbeJob) {
  FLUX_REQUIRE_GPU();
  auto [world, mps] = GetParam();
  flux::testing::run_probe_job(flux::testing::sibling_binary("flux_runtime_gpu_probe", FLUX_RUNTIME_GPU_PROBE_PATH), world,
                               mps, "all", "probe", {{"FLUX_WAIT_TIMEOUT_MS", "2000"}, {"FLUX_RDZV_TIMEOUT_MS", "60000"}});
}

INSTANTIATE_TEST_SUITE_P(WorldsAndMps, RuntimeGpu,
                         ::testing::Combine(::testing::Values(2, 3, 4, 8), ::testing::Values(false, true)),
                         [](const auto& param_info) {
                           return "W" + std::to_string(std::get<0>(param_info.param)) +
                                  (std::get<1>(param_info.param) ? "_mps" : "_timesliced");
                         });

}  // namespace
