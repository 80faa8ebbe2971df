// tests/gemm/test_skinny_gpu.cpp — the skinny decode kernels (src/gemm/kernel/skinny_gemm.cuh) on the GPU:
// decode shapes against the fp64 reference (outputs poisoned, every element checked) with and without
// split-K and with a grid smaller than the work (GemmOptions::max_sms: CTAs loop over items), bitwise
// repeatability, the extension points (wait-before-load held, every tile published once after its stores,
// M-block counters) unsplit and split, and a CUDA-graph replay with new inputs. The generic tests
// (test_gemm_gpu.cpp, test_split_k_gpu.cpp) also run these configs through their loops.
// Skips with a message where no sm_90 GPU is present.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "flux/error.h"
#include "flux/gemm.h"
#include "tests/support/gpu_support.h"

namespace {

using flux::testing::DeviceBuffer;
using flux::testing::GemmProblem;
using flux::testing::random_dim;
using flux::testing::Stream;
using flux::testing::to_host;

constexpr const char* kSkinny[] = {"16x64x128_skinny_mma", "64x64x64_skinny_mma", "8x16x512_gemv"};
// Rows of A per unit (the configs' tile_m).
int skinny_tile_m(const std::string& config) { return config.rfind("16x", 0) == 0 ? 16 : config.rfind("8x", 0) == 0 ? 8 : 64; }

template <class T>
std::vector<T> host_words(const DeviceBuffer& b) {
  std::vector<T> h(b.bytes / sizeof(T));
  FLUX_CUDA_CHECK(cudaMemcpy(h.data(), b.ptr, b.bytes, cudaMemcpyDeviceToHost));
  return h;
}

TEST(SkinnyGpu, DecodeShapesAgainstFp64Reference) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(0x5c1bb7);
  int cases = 0;
  for (const char* config : kSkinny) {
    const int tile_m = skinny_tile_m(config);
    for (flux::DType dtype : {flux::DType::kBF16, flux::DType::kFP16}) {
      for (int64_t m : {int64_t(1), int64_t(2), int64_t(7), int64_t(tile_m), int64_t(tile_m + 37)}) {
        for (int32_t max_sms : {0, 3}) {
          int64_t n = random_dim(rng, 8, 3000);
          if (n % 64 == 0) n += 8;  // a partial last tile
          const int32_t splits = std::vector<int32_t>{1, 1, 2, 3, 5, 8}[rng() % 6];
          const int64_t k = random_dim(rng, 8, 1200) * splits;
          const bool bias = (rng() & 1) != 0;
          flux::GemmDesc desc{n, k, dtype, flux::WeightLayout::kNK};
          GemmProblem p(desc, m, bias, rng(), stream);
          flux::GemmOptions options;
          options.config = config;
          options.split_k = splits;
          options.max_sms = max_sms;
          flux::GemmPlan plan(desc, options);
          ASSERT_EQ(plan.select(m).splits, splits) << plan.select(m).reason;
          p.poison_output(stream);
          plan.run(p.args(), stream);
          FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
          plan.check_status();
          flux::testing::expect_close(p.compare(stream), dtype,
                                      flux::detail::cat(config, " ", flux::to_string(dtype), " M=", m, " N=", n, " K=", k,
                                                        " split ", splits, " max_sms ", max_sms, bias ? " +bias" : ""));
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 3 * 2 * 5 * 2);
}

TEST(SkinnyGpu, ResultsAreBitwiseReproducible) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(404);
  for (const char* config : kSkinny) {
    for (int32_t splits : {1, 4}) {
      flux::GemmDesc desc{2056, 1024 * splits, flux::DType::kBF16, flux::WeightLayout::kNK};
      GemmProblem p(desc, 9, true, rng(), stream);
      flux::GemmOptions options;
      options.config = config;
      options.split_k = splits;
      flux::GemmPlan plan(desc, options);
      p.poison_output(stream);
      plan.run(p.args(), stream);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      const std::vector<char> first = to_host(p.c);
      for (int rep = 0; rep < 4; ++rep) {
        p.poison_output(stream);
        plan.run(p.args(), stream);
        FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
        ASSERT_EQ(0, std::memcmp(first.data(), to_host(p.c).data(), first.size())) << config << " split " << splits;
      }
      flux::testing::expect_close(p.compare(stream), desc.dtype, flux::detail::cat(config, " split ", splits));
    }
  }
}

// Wait flags all released before the call (the kernel must pass them and read A after), publish flags and
// M-block counters checked after: every real tile published exactly once (flag = value, counter = tiles_n).
TEST(SkinnyGpu, HooksUnsplitAndSplit) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(505);
  for (const char* config : kSkinny) {
    for (int32_t splits : {1, 3}) {
      for (flux::PublishMode mode : {flux::PublishMode::kTileFlag, flux::PublishMode::kBlockCounter}) {
        flux::GemmDesc desc{1000, 768 * splits, flux::DType::kFP16, flux::WeightLayout::kNK};
        GemmProblem p(desc, 100, true, rng(), stream);  // several tile rows
        flux::GemmOptions options;
        options.config = config;
        options.split_k = splits;
        options.order.segments = 2;
        options.order.first_segment = 1;
        flux::GemmPlan plan(desc, options);
        const flux::GemmSelection sel = plan.select(p.m);
        DeviceBuffer wait_flags(size_t(sel.tiles_m) * 4), pub(size_t(sel.tiles_m * sel.tiles_n) * 4),
            counters(size_t(sel.tiles_m) * 4);
        std::vector<uint32_t> ready(static_cast<size_t>(sel.tiles_m), 9u);
        FLUX_CUDA_CHECK(cudaMemcpy(wait_flags.ptr, ready.data(), wait_flags.bytes, cudaMemcpyHostToDevice));
        FLUX_CUDA_CHECK(cudaMemset(pub.ptr, 0, pub.bytes));
        FLUX_CUDA_CHECK(cudaMemset(counters.ptr, 0, counters.bytes));
        flux::GemmArgs args = p.args();
        args.wait.flags = wait_flags.as<uint32_t>();
        args.wait.value = 9;
        args.publish.mode = mode;
        args.publish.flags = mode == flux::PublishMode::kTileFlag ? pub.as<uint32_t>() : counters.as<uint32_t>();
        args.publish.value = 6;
        p.poison_output(stream);
        plan.run(args, stream);
        FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
        plan.check_status();
        const std::string what = flux::detail::cat(config, " split ", splits,
                                                   mode == flux::PublishMode::kTileFlag ? " tile flags" : " counters");
        flux::testing::expect_close(p.compare(stream), desc.dtype, what);
        if (mode == flux::PublishMode::kTileFlag) {
          for (uint32_t f : host_words<uint32_t>(pub)) ASSERT_EQ(f, 6u) << what;
        } else {
          for (uint32_t c : host_words<uint32_t>(counters)) ASSERT_EQ(c, uint32_t(sel.tiles_n)) << what;
        }
      }
    }
  }
}

// A wait that is never satisfied times out (bounded), is recorded with the block, and check_status throws.
TEST(SkinnyGpu, AnUnreleasedBlockTimesOutWithItsIndex) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(606);
  for (const char* config : {"16x64x128_skinny_mma", "8x16x512_gemv"}) {
    flux::GemmDesc desc{512, 512, flux::DType::kBF16, flux::WeightLayout::kNK};
    GemmProblem p(desc, 40, false, rng(), stream);
    flux::GemmOptions options;
    options.config = config;
    options.wait_timeout_ns = 20ull * 1000 * 1000;
    options.rank = 2;
    flux::GemmPlan plan(desc, options);
    const flux::GemmSelection sel = plan.select(p.m);
    ASSERT_EQ(sel.tiles_m, (40 + skinny_tile_m(config) - 1) / skinny_tile_m(config)) << config;
    std::vector<uint32_t> host(static_cast<size_t>(sel.tiles_m), 5u);
    host[1] = 4u;  // block 1 never released
    DeviceBuffer flags(host.size() * 4);
    FLUX_CUDA_CHECK(cudaMemcpy(flags.ptr, host.data(), flags.bytes, cudaMemcpyHostToDevice));
    flux::GemmArgs args = p.args();
    args.wait.flags = flags.as<uint32_t>();
    args.wait.value = 5;
    plan.run(args, stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    try {
      plan.check_status();
      FAIL() << config << ": the wait on block 1 did not time out";
    } catch (const flux::TimeoutError& e) {
      const std::string text = e.what();
      EXPECT_NE(text.find("M-block 1 "), std::string::npos) << config << ": " << text;
      EXPECT_NE(text.find("rank 2"), std::string::npos) << config << ": " << text;
    }
  }
}

// Captured after one eager call (the plan's split-K workspace for the stream exists), replayed on new inputs.
TEST(SkinnyGpu, GraphReplayWithNewInputs) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(707);
  for (const char* config : kSkinny) {
    for (int32_t splits : {1, 4}) {
      flux::GemmDesc desc{1544, 512 * splits, flux::DType::kBF16, flux::WeightLayout::kNK};
      GemmProblem p(desc, 5, true, rng(), stream);
      flux::GemmOptions options;
      options.config = config;
      options.split_k = splits;
      flux::GemmPlan plan(desc, options);
      plan.run(p.args(), stream);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      cudaGraph_t graph = nullptr;
      FLUX_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      plan.run(p.args(), stream);
      FLUX_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
      cudaGraphExec_t exec = nullptr;
      FLUX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      for (int rep = 0; rep < 3; ++rep) {
        flux::tools::fill_random(p.a.ptr, p.m * desc.k, desc.dtype, 1000 + rep, 1.0f, stream);
        p.compute_reference(stream);
        p.poison_output(stream);
        FLUX_CUDA_CHECK(cudaGraphLaunch(exec, stream));
        FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
        flux::testing::expect_close(p.compare(stream), desc.dtype,
                                    flux::detail::cat(config, " split ", splits, " replay ", rep));
      }
      FLUX_CUDA_CHECK(cudaGraphExecDestroy(exec));
      FLUX_CUDA_CHECK(cudaGraphDestroy(graph));
    }
  }
}

}  // namespace
