// tests/gemm/test_stream_k_gpu.cpp — stream-K in the GEMM core (src/gemm/stream_k.h, the fixup in
// kernel/ordered_tile_scheduler.cuh) on the GPU: every stream-K config (those compiled with it: 128x128
// cooperative, bf16 / fp16 both layouts) against the fp64 reference at M in {1, 2, 7, 64, 127, 333, 1000, 3000}
// with random N, K (multiples of 8, N not a multiple of any tile), with and without bias, outputs poisoned
// first, each case checked to run stream-K; bitwise repeatability; the publish hook fired once per tile by its
// final piece; wait-before-load holding every piece; a caller's workspace; CUDA-graph capture with and without a
// stream buffer; a small case for compute-sanitizer. Skips with a message where no sm_90 GPU is present.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <array>
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

const flux::GemmConfigInfo& config_named(const std::string& name) {
  for (const flux::GemmConfigInfo& c : flux::gemm_configs()) {
    if (name == c.name) return c;
  }
  throw flux::InvalidArgument("no config " + name);
}

// The 16-bit configs that run stream-K (ConfigShape::stream_k), from the config table.
std::vector<const char*> sixteen_bit_stream_k_configs() {
  std::vector<const char*> names;
  for (const flux::GemmConfigInfo& c : flux::gemm_configs()) {
    if (c.stream_k && !c.fp8) names.push_back(c.name);
  }
  return names;
}

flux::GemmOptions stream_k_options(const flux::GemmConfigInfo& config) {
  flux::GemmOptions o;
  o.config = config.name;
  o.split_k = 1;
  o.stream_k = flux::StreamKMode::kOn;
  return o;
}

// A desc (N % 64 != 0, K a multiple of 16) on which `config` runs stream-K at M, from a few random draws.
bool stream_k_desc(std::mt19937_64& rng, const flux::GemmConfigInfo& config, int64_t m, flux::DType dtype,
                   flux::WeightLayout layout, flux::GemmDesc* out) {
  for (int attempt = 0; attempt < 40; ++attempt) {
    int64_t n = random_dim(rng, 8, m <= 64 ? 6000 : 2400);
    if (n % 64 == 0) n += 8;
    const int64_t k = 16 * (random_dim(rng, 1024, 6144) / 16);
    flux::GemmDesc d{n, k, dtype, layout};
    if (dtype == flux::DType::kE4M3) {
      d.out_dtype = (rng() & 1) ? flux::DType::kBF16 : flux::DType::kFP16;
      d.scale = (rng() & 1) ? flux::ScaleKind::kPerTensor : flux::ScaleKind::kPerRowCol;
    }
    flux::GemmPlan plan(d, stream_k_options(config));
    if (plan.select(m).stream_k) {
      *out = d;
      return true;
    }
  }
  return false;
}

TEST(StreamKGpu, EveryStreamKConfigAgainstFp64Reference) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(0x57ea);
  int cases = 0, configs = 0;
  for (const flux::GemmConfigInfo& config : flux::gemm_configs()) {
    if (!config.stream_k) continue;
    ++configs;
    for (flux::DType dtype : {flux::DType::kBF16, flux::DType::kFP16, flux::DType::kE4M3}) {
      for (flux::WeightLayout layout : {flux::WeightLayout::kNK, flux::WeightLayout::kKN}) {
        if (!flux::gemm_config_compiled(config, dtype, layout)) continue;
        if (config.fp8 != (dtype == flux::DType::kE4M3)) continue;
        for (int64_t m : {1, 2, 7, 64, 127, 333, 1000, 3000}) {
          flux::GemmDesc desc;
          ASSERT_TRUE(stream_k_desc(rng, config, m, dtype, layout, &desc)) << config.name << " M=" << m;
          const bool bias = (rng() & 1) != 0;
          GemmProblem p(desc, m, bias, rng(), stream);
          flux::GemmPlan plan(desc, stream_k_options(config));
          const flux::GemmSelection sel = plan.select(m);
          ASSERT_TRUE(sel.stream_k) << sel.reason;
          p.poison_output(stream);
          plan.run(p.args(), stream);
          FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
          plan.check_status();
          flux::testing::expect_close(p.compare(stream), flux::gemm_out_dtype(desc),
                                      flux::detail::cat(config.name, " stream-K ", flux::to_string(dtype), " ",
                                                        flux::to_string(layout), " M=", m, " N=", desc.n, " K=", desc.k,
                                                        bias ? " +bias" : "", ": ", sel.reason));
          ++cases;
        }
      }
    }
  }
  // Every stream-K config of the table ran, at every M, for every kernel it has: the 16-bit ones for bf16 and
  // fp16 and both weight layouts, e4m3 ones (none compiled with it now) for [N, K] weights (no case silently
  // skipped).
  int sixteen_bit = 0, fp8 = 0;
  for (const flux::GemmConfigInfo& c : flux::gemm_configs()) {
    if (c.stream_k) ++(c.fp8 ? fp8 : sixteen_bit);
  }
  EXPECT_EQ(configs, sixteen_bit + fp8);
  EXPECT_GE(sixteen_bit, 1);  // 128x128 c1x2
  EXPECT_EQ(cases, sixteen_bit * 2 * 2 * 8 + fp8 * 8);
}

TEST(StreamKGpu, ResultsAreBitwiseReproducible) {
  FLUX_REQUIRE_GPU();
  Stream stream, other;
  std::mt19937_64 rng(0x5eb1);
  for (const char* name : sixteen_bit_stream_k_configs()) {
    // 512 x 4608: a partial last wave (72 units of 128 x 256 on 66 clusters).
    flux::GemmDesc desc{4608, 4096, flux::DType::kBF16, flux::WeightLayout::kNK};
    GemmProblem p(desc, 512, true, rng(), stream);
    flux::GemmOptions options = stream_k_options(config_named(name));
    flux::GemmPlan plan(desc, options);
    ASSERT_TRUE(plan.select(p.m).stream_k) << plan.select(p.m).reason;
    p.poison_output(stream);
    plan.run(p.args(), stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<char> first = to_host(p.c);
    for (int rep = 0; rep < 6; ++rep) {
      cudaStream_t s = rep % 2 ? cudaStream_t(other) : cudaStream_t(stream);  // the other stream's own buffers
      p.poison_output(s);
      plan.run(p.args(), s);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(s));
      ASSERT_EQ(0, std::memcmp(first.data(), to_host(p.c).data(), first.size())) << name << " run " << rep;
    }
    plan.check_status();
    flux::testing::expect_close(p.compare(stream), desc.dtype, std::string("stream-K repeat ") + name);
  }
}

TEST(StreamKGpu, EveryTileIsPublishedOnceByItsFinalPiece) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(0x5eb2);
  for (const char* name : sixteen_bit_stream_k_configs()) {
    flux::GemmDesc desc{2056, 3072, flux::DType::kFP16, flux::WeightLayout::kKN};
    GemmProblem p(desc, 1000, true, rng(), stream);
    flux::GemmPlan plan(desc, stream_k_options(config_named(name)));
    const flux::GemmSelection sel = plan.select(p.m);
    ASSERT_TRUE(sel.stream_k) << sel.reason;
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
    for (size_t t = 0; t < tiles; ++t) ASSERT_EQ(host[t], 9u) << name << " tile " << t;
    flux::testing::expect_close(p.compare(stream), desc.dtype, std::string("stream-K publish ") + name);
    // Counters: exactly tiles_n per M-block (a piece that is not final never publishes).
    args.publish.mode = flux::PublishMode::kBlockCounter;
    args.publish.flags = counters.as<uint32_t>();
    plan.run(args, stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<uint32_t> counts(static_cast<size_t>(sel.tiles_m));
    FLUX_CUDA_CHECK(cudaMemcpy(counts.data(), counters.ptr, counters.bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < counts.size(); ++i) ASSERT_EQ(counts[i], uint32_t(sel.tiles_n)) << name << " block " << i;
    plan.check_status();
  }
}

// Wait-before-load under stream-K: every piece of an M-block waits for its flag. The flags are released by a
// host-to-device copy (a copy engine: the waiting GEMM holds every SM) after a delay.
TEST(StreamKGpu, WaitBeforeLoadHoldsEveryPiece) {
  FLUX_REQUIRE_GPU();
  Stream gemm_stream, copy_stream;
  std::mt19937_64 rng(0x5eb3);
  flux::GemmDesc desc{4608, 4096, flux::DType::kBF16, flux::WeightLayout::kNK};
  const int64_t m = 512;
  GemmProblem p(desc, m, false, rng(), gemm_stream);
  flux::GemmOptions options = stream_k_options(config_named("128x128x64_coop_c1x2"));
  options.wait_timeout_ns = 3000ull * 1000 * 1000;
  flux::GemmPlan plan(desc, options);
  const flux::GemmSelection sel = plan.select(m);
  ASSERT_TRUE(sel.stream_k) << sel.reason;
  DeviceBuffer flags(size_t(sel.tiles_m) * 4), a_dest(p.a.bytes);
  FLUX_CUDA_CHECK(cudaMemset(flags.ptr, 0, flags.bytes));
  flux::tools::poison(a_dest.ptr, m * desc.k, gemm_stream);
  std::vector<char> a_host = to_host(p.a);
  std::vector<uint32_t> ones(static_cast<size_t>(sel.tiles_m), 1u);
  p.poison_output(gemm_stream);
  // Run once eagerly so the stream's stream-K buffers exist (the first call allocates them).
  plan.run(p.args(), gemm_stream);
  FLUX_CUDA_CHECK(cudaStreamSynchronize(gemm_stream));
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
  flux::testing::expect_close(p.compare(gemm_stream), desc.dtype, "stream-K wait-before-load");
}

TEST(StreamKGpu, WorkspacesAndGraphCapture) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(0x5eb4);
  flux::GemmDesc desc{4608, 4096, flux::DType::kBF16, flux::WeightLayout::kNK};
  GemmProblem p(desc, 512, true, rng(), stream);
  flux::GemmPlan plan(desc, stream_k_options(config_named("128x128x64_coop_c1x2")));
  ASSERT_TRUE(plan.select(p.m).stream_k);
  const int64_t need = plan.workspace_bytes(p.m);
  ASSERT_GT(need, 0);
  DeviceBuffer ws(static_cast<size_t>(need));
  flux::GemmArgs args = p.args();
  args.workspace = ws.ptr;
  args.workspace_bytes = need - 16;
  try {
    plan.run(args, stream);
    FAIL() << "a too-small workspace was accepted";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("workspace_bytes(M)"), std::string::npos) << e.what();
  }
  args.workspace_bytes = need;
  p.poison_output(stream);
  plan.run(args, stream);  // the caller's partials, the plan's flags for this stream
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  flux::testing::expect_close(p.compare(stream), desc.dtype, "stream-K with the caller's workspace");
  // Captured on a stream with buffers (stream-K replays) and on a fresh one (whole tiles: no allocation inside a
  // capture); every replay right with new inputs.
  for (bool eager_first : {true, false}) {
    Stream capture;
    if (eager_first) {
      plan.run(p.args(), capture);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(capture));
    }
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    FLUX_CUDA_CHECK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal));
    plan.run(p.args(), capture);
    FLUX_CUDA_CHECK(cudaStreamEndCapture(capture, &graph));
    FLUX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int rep = 0; rep < 3; ++rep) {
      flux::tools::fill_random(p.a.ptr, p.m * desc.k, desc.dtype, 200 + rep, 1.0f, capture);
      p.compute_reference(capture);
      p.poison_output(capture);
      FLUX_CUDA_CHECK(cudaGraphLaunch(exec, capture));
      FLUX_CUDA_CHECK(cudaStreamSynchronize(capture));
      flux::testing::expect_close(p.compare(capture), desc.dtype,
                                  flux::detail::cat("stream-K graph replay ", rep, eager_first ? " (buffers)" : " (whole)"));
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  plan.check_status();
}

// The heuristic's own stream-K choices (FLUX_GEMM_STREAM_K=auto) on shapes with a partial last wave (the last:
// 128 x 18432 x 12288, 72 units on 66 clusters, where stream-K measured 1.2-1.3x faster than whole tiles).
TEST(StreamKGpu, TheHeuristicsChoicesAreRight) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(0x5eb5);
  int used = 0;
  for (auto s : {std::array<int64_t, 3>{512, 4608, 4096}, {4096, 1152, 3584}, {3000, 5120, 7168}, {333, 4096, 12288},
                 {128, 18432, 12288}}) {
    flux::GemmDesc desc{s[1], s[2], flux::DType::kBF16, flux::WeightLayout::kNK};
    GemmProblem p(desc, s[0], true, rng(), stream);
    flux::GemmOptions options;
    options.stream_k = flux::StreamKMode::kAuto;  // the knob's default is off
    flux::GemmPlan plan(desc, options);
    const flux::GemmSelection sel = plan.select(p.m);
    used += sel.stream_k;
    p.poison_output(stream);
    plan.run(p.args(), stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    plan.check_status();
    flux::testing::expect_close(p.compare(stream), desc.dtype, sel.reason);
  }
  EXPECT_GT(used, 0) << "the heuristic never chose stream-K";
}

// Small stream-K case for compute-sanitizer memcheck (scripts/device runs it under memcheck).
TEST(StreamKGpu, SanitizerSmallCase) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(0x5eb6);
  flux::GemmDesc desc{1032, 2048, flux::DType::kBF16, flux::WeightLayout::kKN};
  GemmProblem p(desc, 300, true, rng(), stream);
  flux::GemmPlan plan(desc, stream_k_options(config_named("128x128x64_coop_c1x2")));
  const flux::GemmSelection sel = plan.select(p.m);
  ASSERT_TRUE(sel.stream_k) << sel.reason;
  DeviceBuffer pub(size_t(sel.tiles_m * sel.tiles_n) * 4);
  FLUX_CUDA_CHECK(cudaMemset(pub.ptr, 0, pub.bytes));
  flux::GemmArgs args = p.args();
  args.publish.mode = flux::PublishMode::kTileFlag;
  args.publish.flags = pub.as<uint32_t>();
  p.poison_output(stream);
  plan.run(args, stream);
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  plan.check_status();
  flux::testing::expect_close(p.compare(stream), desc.dtype, "stream-K sanitizer case");
}

}  // namespace
