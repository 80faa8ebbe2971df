// tests/gemm/test_split_k_gpu.cpp — split-K in the GEMM core (src/gemm/split_k_reduce.h and the
// partial-output kernels) on the GPU: every split-capable config and both dtypes / layouts against the
// fp64 reference at M in {1, 2, 7, 64, 127, 333, 1000, 3000} with random N, K (multiples of 8, N not a
// multiple of any tile), with and without bias, outputs poisoned first; bitwise repeatability; the
// publish hook (tile flags, M-block counters) fired by the reduction; wait-before-load on a split
// GEMM; a caller's workspace, a too-small one, and CUDA-graph capture with and without one.
// Skips with a message where no sm_90 GPU is present.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
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

// N, K multiples of 8 with N % 64 != 0 (no tile divides it) and K split into `splits` slices of a
// multiple of 8.
flux::GemmDesc random_split_desc(std::mt19937_64& rng, int splits, flux::DType dtype, flux::WeightLayout layout) {
  int64_t n = random_dim(rng, 8, 1600);
  if (n % 64 == 0) n += 8;
  const int64_t slice = random_dim(rng, 8, 640);
  return flux::GemmDesc{n, slice * splits, dtype, layout};
}

TEST(SplitKGpu, EverySplitConfigAgainstFp64Reference) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(0x5b11);
  int cases = 0;
  for (flux::DType dtype : {flux::DType::kBF16, flux::DType::kFP16}) {
    for (flux::WeightLayout layout : {flux::WeightLayout::kNK, flux::WeightLayout::kKN}) {
      for (const flux::GemmConfigInfo& config : flux::gemm_configs()) {
        if (!config.split_k || !flux::gemm_config_compiled(config, dtype, layout)) continue;
        for (int64_t m : {1, 2, 7, 64, 127, 333, 1000, 3000}) {
          const int splits = std::vector<int>{2, 3, 4, 7, 8, 16}[rng() % 6];
          const bool bias = (rng() & 1) != 0;
          flux::GemmDesc desc = random_split_desc(rng, splits, dtype, layout);
          GemmProblem p(desc, m, bias, rng(), stream);
          flux::GemmOptions options;
          options.config = config.name;
          options.split_k = splits;
          flux::GemmPlan plan(desc, options);
          ASSERT_EQ(plan.select(m).splits, splits) << plan.select(m).reason;
          p.poison_output(stream);
          plan.run(p.args(), stream);
          FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
          plan.check_status();
          flux::testing::expect_close(p.compare(stream), dtype,
                                      flux::detail::cat(config.name, " split ", splits, " ", flux::to_string(dtype), " ",
                                                        flux::to_string(layout), " M=", m, " N=", desc.n, " K=", desc.k,
                                                        bias ? " +bias" : ""));
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 2 * 2 * 5 * 8 + 2 * 1 * 3 * 8);  // 5 TMA split configs x 2 layouts, 3 skinny x [N, K]
}

TEST(SplitKGpu, TheHeuristicSplitsDecodeShapesAndIsRight) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(0xdec0de);
  int split = 0;
  for (int64_t m : {1, 16, 128}) {
    for (auto nk : {std::pair<int64_t, int64_t>{4096, 4096}, {1536, 8192}, {14336, 4096}}) {
      flux::GemmDesc desc{nk.first, nk.second, flux::DType::kBF16, flux::WeightLayout::kNK};
      GemmProblem p(desc, m, true, rng(), stream);
      flux::GemmPlan plan(desc);
      const flux::GemmSelection sel = plan.select(m);
      split += sel.splits > 1;
      p.poison_output(stream);
      plan.run(p.args(), stream);
      flux::testing::expect_close(p.compare(stream), desc.dtype, sel.reason);
    }
  }
  EXPECT_GT(split, 0) << "the heuristic never split a decode shape";
}

TEST(SplitKGpu, ResultsAreBitwiseReproducible) {
  FLUX_REQUIRE_GPU();
  Stream stream, other;
  std::mt19937_64 rng(31);
  for (int splits : {3, 8, 16}) {
    flux::GemmDesc desc{1544, 512 * splits, flux::DType::kBF16, flux::WeightLayout::kNK};
    GemmProblem p(desc, 77, true, rng(), stream);
    flux::GemmOptions options;
    options.split_k = splits;
    flux::GemmPlan plan(desc, options);
    p.poison_output(stream);
    plan.run(p.args(), stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<char> first = to_host(p.c);
    for (int rep = 0; rep < 5; ++rep) {
      cudaStream_t s = rep % 2 ? cudaStream_t(other) : cudaStream_t(stream);  // the other stream's own workspace
      p.poison_output(s);
      plan.run(p.args(), s);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(s));
      ASSERT_EQ(0, std::memcmp(first.data(), to_host(p.c).data(), first.size())) << "split " << splits << " run " << rep;
    }
    flux::testing::expect_close(p.compare(stream), desc.dtype, flux::detail::cat("split ", splits));
  }
}

TEST(SplitKGpu, TheReductionPublishesEveryTileAfterItsStores) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(41);
  for (const char* config : {"128x128x64_pingpong_c1x2", "64x256x64_pingpong_c1x2", "64x128x64_pingpong_swapab_c1x2",
                             "16x64x128_pingpong_swapab_c1x1"}) {
    flux::GemmDesc desc{1000, 1024, flux::DType::kFP16, flux::WeightLayout::kKN};
    GemmProblem p(desc, 300, true, rng(), stream);
    flux::GemmOptions options;
    options.config = config;
    options.split_k = 4;
    flux::GemmPlan plan(desc, options);
    const flux::GemmSelection sel = plan.select(p.m);
    ASSERT_EQ(sel.splits, 4);
    const size_t tiles = size_t(sel.tiles_m * sel.tiles_n);
    DeviceBuffer flags(tiles * 4), counters(size_t(sel.tiles_m) * 4);
    FLUX_CUDA_CHECK(cudaMemset(flags.ptr, 0, flags.bytes));
    FLUX_CUDA_CHECK(cudaMemset(counters.ptr, 0, counters.bytes));
    flux::GemmArgs args = p.args();
    args.publish.mode = flux::PublishMode::kTileFlag;
    args.publish.flags = flags.as<uint32_t>();
    args.publish.value = 9;
    p.poison_output(stream);
    plan.run(args, stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<uint32_t> host(tiles);
    FLUX_CUDA_CHECK(cudaMemcpy(host.data(), flags.ptr, flags.bytes, cudaMemcpyDeviceToHost));
    for (size_t t = 0; t < tiles; ++t) ASSERT_EQ(host[t], 9u) << config << " tile " << t;
    flux::testing::expect_close(p.compare(stream), desc.dtype, std::string("split publish ") + config);
    args.publish.mode = flux::PublishMode::kBlockCounter;
    args.publish.flags = counters.as<uint32_t>();
    plan.run(args, stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<uint32_t> counts(static_cast<size_t>(sel.tiles_m));
    FLUX_CUDA_CHECK(cudaMemcpy(counts.data(), counters.ptr, counters.bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < counts.size(); ++i) ASSERT_EQ(counts[i], uint32_t(sel.tiles_n)) << config << " block " << i;
  }
}

// Wait-before-load on a split GEMM: every slice of an M-block waits for its flag. The flags are
// released by a host-to-device copy (a copy engine: the waiting GEMM may hold every SM) after a delay.
TEST(SplitKGpu, WaitBeforeLoadHoldsEverySlice) {
  FLUX_REQUIRE_GPU();
  Stream gemm_stream, copy_stream;
  std::mt19937_64 rng(43);
  flux::GemmDesc desc{2048, 4096, flux::DType::kBF16, flux::WeightLayout::kNK};
  const int64_t m = 200;
  GemmProblem p(desc, m, false, rng(), gemm_stream);
  flux::GemmOptions options;
  options.split_k = 8;
  options.wait_timeout_ns = 3000ull * 1000 * 1000;
  flux::GemmPlan plan(desc, options);
  const flux::GemmSelection sel = plan.select(m);
  DeviceBuffer flags(size_t(sel.tiles_m) * 4), a_dest(p.a.bytes);
  FLUX_CUDA_CHECK(cudaMemset(flags.ptr, 0, flags.bytes));
  flux::tools::poison(a_dest.ptr, m * desc.k, gemm_stream);
  std::vector<char> a_host = to_host(p.a);
  std::vector<uint32_t> ones(static_cast<size_t>(sel.tiles_m), 1u);
  p.poison_output(gemm_stream);
  FLUX_CUDA_CHECK(cudaStreamSynchronize(gemm_stream));
  flux::GemmArgs args = p.args();
  args.a = a_dest.ptr;
  args.wait.flags = flags.as<uint32_t>();
  args.wait.value = 1;
  plan.run(args, gemm_stream);  // starts first and must wait
  FLUX_CUDA_CHECK(cudaLaunchHostFunc(
      copy_stream, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, nullptr));
  FLUX_CUDA_CHECK(cudaMemcpyAsync(a_dest.ptr, a_host.data(), a_host.size(), cudaMemcpyHostToDevice, copy_stream));
  FLUX_CUDA_CHECK(cudaMemcpyAsync(flags.ptr, ones.data(), flags.bytes, cudaMemcpyHostToDevice, copy_stream));
  FLUX_CUDA_CHECK(cudaStreamSynchronize(copy_stream));
  FLUX_CUDA_CHECK(cudaStreamSynchronize(gemm_stream));
  EXPECT_NO_THROW(plan.check_status());
  flux::testing::expect_close(p.compare(gemm_stream), desc.dtype, "split-K wait-before-load");
}

TEST(SplitKGpu, WorkspacesAndGraphCapture) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(47);
  flux::GemmDesc desc{4096, 4096, flux::DType::kBF16, flux::WeightLayout::kNK};
  GemmProblem p(desc, 8, true, rng(), stream);
  flux::GemmOptions options;
  options.split_k = 8;
  flux::GemmPlan plan(desc, options);
  const int64_t need = plan.workspace_bytes(p.m);
  ASSERT_EQ(need, 8 * p.m * desc.n * 4);
  DeviceBuffer ws(static_cast<size_t>(need));
  flux::GemmArgs args = p.args();
  // Too small a caller's workspace is refused before anything is launched.
  args.workspace = ws.ptr;
  args.workspace_bytes = need - 16;
  try {
    plan.run(args, stream);
    FAIL() << "a too-small workspace was accepted";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("workspace_bytes(M)"), std::string::npos) << e.what();
  }
  args.workspace_bytes = need;
  // Captured with the caller's workspace: the replay splits and is right with new inputs.
  for (bool own_workspace : {true, false}) {
    Stream capture;  // a fresh stream: no plan workspace exists for it
    flux::GemmArgs a = args;
    if (!own_workspace) {
      a.workspace = nullptr;
      a.workspace_bytes = 0;
    }
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    FLUX_CUDA_CHECK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal));
    plan.run(a, capture);  // without a workspace: runs unsplit (no allocation inside capture)
    FLUX_CUDA_CHECK(cudaStreamEndCapture(capture, &graph));
    FLUX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    size_t nodes = 0;
    FLUX_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    EXPECT_EQ(nodes, own_workspace ? 2u : 1u) << "split GEMM + reduction, or the unsplit GEMM alone";
    for (int rep = 0; rep < 3; ++rep) {
      flux::tools::fill_random(p.a.ptr, p.m * desc.k, desc.dtype, 100 + rep, 1.0f, capture);
      p.compute_reference(capture);
      p.poison_output(capture);
      FLUX_CUDA_CHECK(cudaGraphLaunch(exec, capture));
      FLUX_CUDA_CHECK(cudaStreamSynchronize(capture));
      flux::testing::expect_close(p.compare(capture), desc.dtype,
                                  flux::detail::cat("graph replay ", rep, own_workspace ? " (caller workspace)" : " (unsplit)"));
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
}

TEST(SplitKGpu, BadSplitsAreRejected) {
  FLUX_REQUIRE_GPU();
  flux::GemmOptions options;
  options.split_k = 3;  // 1000 / 3 is not an integer
  EXPECT_THROW(flux::GemmPlan(flux::GemmDesc{256, 1000, flux::DType::kBF16, flux::WeightLayout::kNK}, options),
               flux::InvalidArgument);
  options.split_k = 2;
  options.config = "128x256x64_coop_c2x1";  // no partial-output kernel
  try {
    flux::GemmPlan plan(flux::GemmDesc{256, 1024, flux::DType::kBF16, flux::WeightLayout::kNK}, options);
    FAIL() << "a split of a config without split-K kernels was accepted";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot split K"), std::string::npos) << e.what();
  }
}

// Small split case for compute-sanitizer memcheck (scripts/device runs it under memcheck).
TEST(SplitKGpu, SanitizerSmallCase) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(53);
  flux::GemmDesc desc{264, 1024, flux::DType::kBF16, flux::WeightLayout::kKN};
  GemmProblem p(desc, 33, true, rng(), stream);
  flux::GemmOptions options;
  options.split_k = 4;
  flux::GemmPlan plan(desc, options);
  const flux::GemmSelection sel = plan.select(p.m);
  DeviceBuffer pub(size_t(sel.tiles_m * sel.tiles_n) * 4);
  FLUX_CUDA_CHECK(cudaMemset(pub.ptr, 0, pub.bytes));
  flux::GemmArgs args = p.args();
  args.publish.mode = flux::PublishMode::kTileFlag;
  args.publish.flags = pub.as<uint32_t>();
  p.poison_output(stream);
  plan.run(args, stream);
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  plan.check_status();
  flux::testing::expect_close(p.compare(stream), desc.dtype, "split-K sanitizer case");
}

}  // namespace
