// tests/ops/test_fp8_ops_gpu.cpp — the fused ops in FP8 on the GPU: AG+GEMM, GEMM+RS and GEMM+AR with e4m3
// inputs and scales at W in {1, 2, 4, 8} ranks as processes on the GPUs present under MPS, and W = 2
// time-sliced; each rank runs fp8_ops_probe (correctness of every path that runs here against the
// dequantized fp64 reference, the gathered FP8 A and row scales, AR's bits equal on every rank; CUDA-graph
// replay; bad inputs). Skips with a message without an sm_90 GPU.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "tests/support/gpu_support.h"
#include "tests/support/process.h"

namespace {

class Fp8OpsGpu : public ::testing::TestWithParam<std::tuple<int, bool, std::string>> {};

TEST_P(Fp8OpsGpu, ProbeJob) {
  FLUX_REQUIRE_GPU();
  auto [world, mps, mode] = GetParam();
  flux::testing::run_probe_job(flux::testing::sibling_binary("flux_fp8_ops_probe", FLUX_FP8_OPS_PROBE_PATH), world, mps, mode,
                               "fp8_ops probe", {{"FLUX_WAIT_TIMEOUT_MS", "20000"}, {"FLUX_RDZV_TIMEOUT_MS", "120000"}});
}

INSTANTIATE_TEST_SUITE_P(
    Jobs, Fp8OpsGpu,
    ::testing::Values(std::make_tuple(1, false, std::string("correctness")), std::make_tuple(2, true, std::string("correctness")),
                      std::make_tuple(4, true, std::string("correctness")), std::make_tuple(8, true, std::string("correctness")),
                      std::make_tuple(2, false, std::string("correctness")), std::make_tuple(1, false, std::string("graph")),
                      std::make_tuple(2, true, std::string("graph")), std::make_tuple(4, true, std::string("graph")),
                      std::make_tuple(2, true, std::string("bad")), std::make_tuple(1, false, std::string("bad"))),
    [](const auto& param_info) {
      return "W" + std::to_string(std::get<0>(param_info.param)) + (std::get<1>(param_info.param) ? "_mps_" : "_timesliced_") +
             std::get<2>(param_info.param);
    });

}  // namespace
