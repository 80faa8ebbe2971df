// tests/baseline/test_cublas_gemm_gpu.cpp — the cuBLAS baseline: every candidate algorithm computes the
// same product as the fp64 reference (both layouts, with and without bias), and tune() picks one.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>

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

// cuBLASLt FP8 (the baseline of `flux-bench gemm --dtypes e4m3`): e4m3 inputs with per-tensor scales match
// the dequantized fp64 reference on every candidate; per-row / per-column (outer-vector) scales either
// match or are refused as Unsupported by this cuBLASLt (the bench then falls back to per-tensor and says so).
TEST(CublasGemmGpu, Fp8CandidatesMatchTheReference) {
  FLUX_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  FLUX_CUDA_CHECK(cudaStreamCreate(&stream));
  std::mt19937_64 rng(37);
  for (flux::ScaleKind scale : {flux::ScaleKind::kPerTensor, flux::ScaleKind::kPerRowCol}) {
    for (flux::DType out : {flux::DType::kBF16, flux::DType::kFP16}) {
      for (bool bias : {false, true}) {
        flux::GemmDesc desc{1544, 1024, flux::DType::kE4M3, flux::WeightLayout::kNK, out, scale};
        flux::testing::GemmProblem p(desc, 1000, bias, rng(), stream);
        std::unique_ptr<flux::CublasGemm> gemm;
        try {
          gemm = std::make_unique<flux::CublasGemm>(desc, p.m, bias);
        } catch (const flux::Unsupported& e) {
          ASSERT_EQ(scale, flux::ScaleKind::kPerRowCol) << e.what();
          std::printf("cuBLASLt: no outer-vector FP8 kernel here (%s)\n", e.what());
          continue;
        }
        ASSERT_GE(gemm->num_candidates(), 1);
        for (int c = 0; c < gemm->num_candidates(); ++c) {
          p.poison_output(stream);
          gemm->run_candidate(c, p.args(), stream);
          flux::testing::expect_close(p.compare(stream), out,
                                      std::string(flux::to_string(scale)) + " " + gemm->candidate_name(c));
        }
      }
    }
  }
  cudaStreamDestroy(stream);
}

}  // namespace
