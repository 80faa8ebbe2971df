// tests/baseline/test_cublas_gemm_gpu.cpp — the cuBLAS baseline: every candidate algorithm computes the
// same product as the fp64 reference (both layouts, with and without bias), and tune() picks one.
#include <gtest/gtest.h>

#include <random>

#include "flux/baseline/cublas_gemm.h"
#include "tests/support/gpu_support.h"

namespace {

TEST(CublasGemmGpu, EveryCandidateMatchesTheReference) {
  FLUX_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  FLUX_CUDA_CHECK(cudaStreamCreate(&stream));
  std::mt19937_64 rng(31);
  for (flux::DType dtype : {flux::DType::kBF16, flux::DType::kFP16}) {
    for (flux::WeightLayout layout : {flux::WeightLayout::kNK, flux::WeightLayout::kKN}) {
      for (bool bias : {false, true}) {
        flux::GemmDesc desc{1536, 1024, dtype, layout};
        flux::testing::GemmProblem p(desc, 1000, bias, rng(), stream);
        flux::CublasGemm gemm(desc, p.m, bias);
        ASSERT_GE(gemm.num_candidates(), 1);
        for (int c = 0; c < gemm.num_candidates(); ++c) {
          p.poison_output(stream);
          gemm.run_candidate(c, p.args(), stream);
          flux::testing::expect_close(p.compare(stream), dtype, gemm.candidate_name(c));
        }
        int best = gemm.tune(p.args(), stream, 2);
        EXPECT_EQ(best, gemm.chosen());
        flux::GemmArgs wrong = p.args();
        wrong.m = p.m + 1;
        EXPECT_THROW(gemm.run(wrong, stream), flux::InvalidArgument);
      }
    }
  }
  cudaStreamDestroy(stream);
}

}  // namespace
