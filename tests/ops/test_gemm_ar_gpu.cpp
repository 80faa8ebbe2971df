// tests/ops/test_gemm_ar_gpu.cpp — GEMM+AR on the GPU: W in {1, 2, 3, 4, 8} ranks as processes on the
// GPUs present under MPS, and W = 2 time-sliced; each rank runs gemm_ar_probe (every path against fp64
// from every rank's inputs with every rank's out bitwise equal, run-to-run determinism, 1000 calls
// interleaved with GEMM+RS, bad inputs, CUDA-graph capture and replay). Skips with a message without an
// sm_90 GPU.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "tests/support/gpu_support.h"
#include "tests/support/process.h"

namespace {

class GemmArGpu : public ::testing::TestWithParam<std::tuple<int, bool, std::string>> {};

TEST_P(GemmArGpu, ProbeJob) {
  FLUX_REQUIRE_GPU();
  auto [world, mps, mode] = GetParam();
  flux::testing::run_probe_job(flux::testing::sibling_binary("flux_gemm_ar_probe", FLUX_GEMM_AR_PROBE_PATH), world, mps, mode,
                               "gemm_ar probe", {{"FLUX_WAIT_TIMEOUT_MS", "20000"}, {"FLUX_RDZV_TIMEOUT_MS", "120000"}});
}

INSTANTIATE_TEST_SUITE_P(
    Jobs, GemmArGpu,
    ::testing::Values(std::make_tuple(1, false, std::string("correctness")), std::make_tuple(2, true, std::string("correctness")),
                      std::make_tuple(3, true, std::string("correctness")), std::make_tuple(4, true, std::string("correctness")),
                      std::make_tuple(8, true, std::string("correctness")), std::make_tuple(2, false, std::string("correctness")),
                      std::make_tuple(2, true, std::string("determinism")), std::make_tuple(4, true, std::string("determinism")),
                      std::make_tuple(2, true, std::string("loop")), std::make_tuple(3, true, std::string("bad")),
                      std::make_tuple(1, false, std::string("graph")), std::make_tuple(2, true, std::string("graph")),
                      std::make_tuple(4, true, std::string("graph"))),
    [](const auto& param_info) {
      return "W" + std::to_string(std::get<0>(param_info.param)) + (std::get<1>(param_info.param) ? "_mps_" : "_timesliced_") +
             std::get<2>(param_info.param);
    });

}  // namespace
