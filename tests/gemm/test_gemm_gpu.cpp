// tests/gemm/test_gemm_gpu.cpp — the GEMM core on the GPU: every compiled kernel against the fp64
// reference on fresh random data (outputs poisoned first, every element checked), the tile orders,
// wait-before-load with a real producer (copy engine + stream-ordered flag writes), its timeout
// error, and publish-after-store with a real consumer (stream-ordered waits + copies).
// Skips with a message where no sm_90 GPU is present.
#include <cuda.h>
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
#include "tests/support/graph_replay.h"

namespace {

using flux::testing::DeviceBuffer;
using flux::testing::GemmProblem;

using flux::testing::random_dim;
using flux::testing::Stream;

std::string case_name(const flux::GemmDesc& d, int64_t m, bool bias, const std::string& config) {
  return flux::detail::cat(config, " ", flux::to_string(d.dtype), " ", flux::to_string(d.layout), " M=", m, " N=", d.n,
                           " K=", d.k, bias ? " +bias" : "");
}

// Driver entry points for stream-ordered flag operations (the copy engine's side of the hooks).
using StreamWriteValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
using StreamWaitValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
template <class Fn>
Fn driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult result{};
  FLUX_CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &result));
  if (result != cudaDriverEntryPointSuccess || fn == nullptr) throw flux::CudaError(std::string("no driver entry ") + name);
  return reinterpret_cast<Fn>(fn);
}

TEST(GemmCoreGpu, EveryKernelAgainstFp64Reference) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(0x5eed2026);
  for (flux::DType dtype : {flux::DType::kBF16, flux::DType::kFP16}) {
    for (flux::WeightLayout layout : {flux::WeightLayout::kNK, flux::WeightLayout::kKN}) {
      for (const flux::GemmConfigInfo& config : flux::gemm_configs()) {
        if (!flux::gemm_config_compiled(config, dtype, layout)) {
          // Not compiled for this layout (the skinny configs read B as [N, K] only): refused by name.
          flux::GemmOptions options;
          options.config = config.name;
          try {
            flux::GemmPlan plan(flux::GemmDesc{64, 64, dtype, layout}, options);
            ADD_FAILURE() << config.name << " built a plan for " << flux::to_string(layout) << " with no kernel";
          } catch (const flux::Unsupported& e) {
            EXPECT_NE(std::string(e.what()).find(config.name), std::string::npos) << e.what();
          }
          continue;
        }
        for (int64_t m : {1, 7, 127, 1000, 3000}) {
          for (bool bias : {false, true}) {
            flux::GemmDesc desc{random_dim(rng, 8, 1536), random_dim(rng, 8, 1536), dtype, layout};
            GemmProblem p(desc, m, bias, rng(), stream);
            flux::GemmOptions options;
            options.config = config.name;
            flux::GemmPlan plan(desc, options);
            p.poison_output(stream);
            plan.run(p.args(), stream);
            FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
            plan.check_status();
            flux::testing::expect_close(p.compare(stream), dtype, case_name(desc, m, bias, config.name));
          }
        }
      }
    }
  }
}

TEST(GemmCoreGpu, HeuristicChoiceOnLargerShapes) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(77);
  for (int64_t m : {1000, 4096}) {
    for (int64_t n : {1024, 6144}) {
      flux::GemmDesc desc{n, 4096, flux::DType::kBF16, flux::WeightLayout::kNK};
      GemmProblem p(desc, m, true, rng(), stream);
      flux::GemmPlan plan(desc);
      p.poison_output(stream);
      plan.run(p.args(), stream);
      flux::testing::expect_close(p.compare(stream), desc.dtype, plan.select(m).reason);
    }
  }
}

TEST(GemmCoreGpu, TileOrdersGiveTheSameProduct) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(99);
  flux::GemmDesc desc{2048, 1024, flux::DType::kBF16, flux::WeightLayout::kNK};
  GemmProblem p(desc, 3000, false, rng(), stream);
  for (int segments : {1, 3, 8, 64}) {
    for (flux::Raster raster : {flux::Raster::kRowMajor, flux::Raster::kColMajor}) {
      for (int swizzle : {1, 4, 16}) {
        for (const char* config : {"128x256x64_coop_c2x1", "128x128x64_pingpong_c1x2", "16x64x128_skinny_mma",
                                   "64x64x64_skinny_mma", "8x16x512_gemv", "64x128x64_pingpong_swapab_c1x2",
                                   "16x64x128_pingpong_swapab_c1x1", "64x64x128_pingpong_swapab_c1x1"}) {
          flux::GemmOptions options;
          options.config = config;
          options.order.segments = segments;
          options.order.first_segment = static_cast<int>(rng() % segments);
          options.order.raster = raster;
          options.order.swizzle = swizzle;
          flux::GemmPlan plan(desc, options);
          p.poison_output(stream);
          plan.run(p.args(), stream);
          flux::testing::expect_close(p.compare(stream), desc.dtype,
                                      flux::detail::cat(config, " W=", segments, " first=", options.order.first_segment,
                                                        " raster=", int(raster), " swizzle=", swizzle));
        }
      }
    }
  }
}

// Pinned host memory the test owns.
struct PinnedBuffer {
  void* ptr = nullptr;
  explicit PinnedBuffer(size_t bytes) { FLUX_CUDA_CHECK(cudaMallocHost(&ptr, bytes)); }
  ~PinnedBuffer() { cudaFreeHost(ptr); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
};

// The producer is the copy engine: after a delay it copies the rows of each M-block (last block
// first) into A, then releases that block's flag with a stream-ordered write. A starts poisoned, so
// a tile loaded before its flag would make NaNs in C. The copies must not need an SM: the persistent
// GEMM holds every SM while it waits. Measured on the H200 (2026-12-01): a same-device
// cudaMemcpyAsync, and cudaMemcpyBatchAsync with cudaMemcpyFlagPreferOverlapWithCompute, both wait
// for a free SM, so the GEMM's wait timed out; a host-to-device copy runs on a copy engine.
TEST(GemmCoreGpu, WaitBeforeLoadWaitsForACopyEngineProducer) {
  FLUX_REQUIRE_GPU();
  auto write_value = driver_entry<StreamWriteValue32>("cuStreamWriteValue32");
  Stream gemm_stream, copy_stream;
  std::mt19937_64 rng(4242);
  for (const char* config : {"128x256x64_coop_c2x1", "128x128x64_pingpong_c1x2", "64x256x64_pingpong_c1x2",
                             "128x192x64_coop_c2x1", "128x144x64_coop_c2x1", "128x112x64_coop_c2x1",
                             "128x176x64_coop_c2x1", "16x64x128_skinny_mma", "64x64x64_skinny_mma", "8x16x512_gemv",
                             "64x128x64_pingpong_swapab_c1x2", "16x64x128_pingpong_swapab_c1x1",
                             "64x64x128_pingpong_swapab_c1x1"}) {
    flux::GemmDesc desc{4096, 2048, flux::DType::kFP16, flux::WeightLayout::kNK};
    const int64_t m = 1900;
    GemmProblem p(desc, m, true, rng(), gemm_stream);  // reference from p.a (the data the producer copies)
    flux::GemmOptions options;
    options.config = config;
    options.wait_timeout_ns = 3000ull * 1000 * 1000;
    flux::GemmPlan plan(desc, options);
    const flux::GemmSelection sel = plan.select(m);
    const int64_t block_rows = sel.config.tile_m;
    const size_t a_bytes = size_t(m * desc.k) * 2;
    PinnedBuffer a_host(a_bytes);
    FLUX_CUDA_CHECK(cudaMemcpy(a_host.ptr, p.a.ptr, a_bytes, cudaMemcpyDeviceToHost));
    const char* source = static_cast<const char*>(a_host.ptr);
    DeviceBuffer a_dest(a_bytes);
    DeviceBuffer flags(size_t(sel.tiles_m) * sizeof(uint32_t));
    FLUX_CUDA_CHECK(cudaMemset(flags.ptr, 0, flags.bytes));
    flux::tools::poison(a_dest.ptr, m * desc.k, gemm_stream);
    p.poison_output(gemm_stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(gemm_stream));

    flux::GemmArgs args = p.args();
    args.a = a_dest.ptr;
    args.wait.flags = flags.as<uint32_t>();
    args.wait.value = 1;
    plan.run(args, gemm_stream);  // starts first and must wait

    FLUX_CUDA_CHECK(cudaLaunchHostFunc(
        copy_stream, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, nullptr));
    for (int64_t blk = sel.tiles_m - 1; blk >= 0; --blk) {
      int64_t r0 = blk * block_rows, rows = std::min<int64_t>(block_rows, m - r0);
      size_t off = size_t(r0 * desc.k) * 2, bytes = size_t(rows * desc.k) * 2;
      void* dst = static_cast<char*>(a_dest.ptr) + off;
      const void* src = source + off;
      FLUX_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copy_stream));
      CUresult r = write_value(copy_stream, reinterpret_cast<CUdeviceptr>(flags.as<uint32_t>() + blk), 1, 0);
      ASSERT_EQ(r, CUDA_SUCCESS) << "cuStreamWriteValue32";
    }
    FLUX_CUDA_CHECK(cudaStreamSynchronize(copy_stream));
    FLUX_CUDA_CHECK(cudaStreamSynchronize(gemm_stream));
    EXPECT_NO_THROW(plan.check_status());
    flux::testing::expect_close(p.compare(gemm_stream), desc.dtype, std::string("wait-before-load ") + config);
  }
}

// The heuristic's pick at M = 777 (swap-AB 64x128 where it wins) and the decode rule's swap-AB configs: the
// timed-out M-block is C's under swap-AB too.
TEST(GemmCoreGpu, WaitTimeoutStopsTheKernelAndNamesTheBlock) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(7);
  flux::GemmDesc desc{1024, 512, flux::DType::kBF16, flux::WeightLayout::kKN};
  GemmProblem p(desc, 777, false, rng(), stream);
  for (const char* config : {"", "16x64x128_pingpong_swapab_c1x1", "64x128x64_pingpong_swapab_c1x2"}) {
    SCOPED_TRACE(std::string("config '") + config + "'");
    flux::GemmOptions options;
    options.config = config;
    options.wait_timeout_ns = 20ull * 1000 * 1000;  // 20 ms
    options.rank = 3;
    flux::GemmPlan plan(desc, options);
    const flux::GemmSelection sel = plan.select(p.m);
    DeviceBuffer flags(size_t(sel.tiles_m) * sizeof(uint32_t));
    // Every block ready except block 2, which no one will ever release.
    std::vector<uint32_t> host(static_cast<size_t>(sel.tiles_m), 5u);
    host[2] = 4u;
    FLUX_CUDA_CHECK(cudaMemcpy(flags.ptr, host.data(), flags.bytes, cudaMemcpyHostToDevice));
    flux::GemmArgs args = p.args();
    args.wait.flags = flags.as<uint32_t>();
    args.wait.value = 5;
    args.wait.peer = 1;
    auto start = std::chrono::steady_clock::now();
    plan.run(args, stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));  // bounded: the kernel stops waiting
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 5.0) << "the kernel should give up after ~20 ms";
    try {
      plan.check_status();
      FAIL() << "a timed-out wait was not reported";
    } catch (const flux::TimeoutError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("wait-before-load timed out"), std::string::npos) << what;
      EXPECT_NE(what.find("M-block 2 "), std::string::npos) << what;
      EXPECT_NE(what.find("expected >= 5, last seen 4"), std::string::npos) << what;
      EXPECT_NE(what.find("rank 3"), std::string::npos) << what;
      EXPECT_NE(what.find("peer 1"), std::string::npos) << what;
    }
    // The record is cleared and the plan is usable again.
    EXPECT_NO_THROW(plan.check_status());
    host[2] = 5u;
    FLUX_CUDA_CHECK(cudaMemcpy(flags.ptr, host.data(), flags.bytes, cudaMemcpyHostToDevice));
    p.poison_output(stream);
    plan.run(args, stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    EXPECT_NO_THROW(plan.check_status());
    flux::testing::expect_close(p.compare(stream), desc.dtype, "after timeout");
  }
}

TEST(GemmCoreGpu, PublishAfterStoreFlagsAndCounters) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(11);
  for (const char* config : {"128x256x64_coop_c2x1", "128x128x64_pingpong_c1x2", "256x128x64_coop_c1x2",
                             "128x128x64_coop_c1x2", "128x192x64_coop_c2x1", "128x144x64_coop_c2x1",
                             "128x112x64_coop_c2x1", "128x176x64_coop_c2x1", "16x64x128_skinny_mma",
                             "64x64x64_skinny_mma", "8x16x512_gemv", "64x128x64_pingpong_swapab_c1x2",
                             "16x64x128_pingpong_swapab_c1x1", "64x64x128_pingpong_swapab_c1x1"}) {
    flux::GemmDesc desc{1000, 768, flux::DType::kBF16, flux::WeightLayout::kNK};
    GemmProblem p(desc, 1500, true, rng(), stream);
    flux::GemmOptions options;
    options.config = config;
    flux::GemmPlan plan(desc, options);
    const flux::GemmSelection sel = plan.select(p.m);
    const size_t tiles = size_t(sel.tiles_m * sel.tiles_n);
    DeviceBuffer flags(tiles * sizeof(uint32_t)), counters(size_t(sel.tiles_m) * sizeof(uint32_t));
    FLUX_CUDA_CHECK(cudaMemset(flags.ptr, 0, flags.bytes));
    FLUX_CUDA_CHECK(cudaMemset(counters.ptr, 0, counters.bytes));

    flux::GemmArgs args = p.args();
    args.publish.mode = flux::PublishMode::kTileFlag;
    args.publish.flags = flags.as<uint32_t>();
    args.publish.value = 7;
    p.poison_output(stream);
    plan.run(args, stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<uint32_t> host(tiles);
    FLUX_CUDA_CHECK(cudaMemcpy(host.data(), flags.ptr, flags.bytes, cudaMemcpyDeviceToHost));
    for (size_t t = 0; t < tiles; ++t) ASSERT_EQ(host[t], 7u) << config << " tile " << t << " not published";
    flux::testing::expect_close(p.compare(stream), desc.dtype, std::string("publish tile flags ") + config);

    args.publish.mode = flux::PublishMode::kBlockCounter;
    args.publish.flags = counters.as<uint32_t>();
    for (int rep = 1; rep <= 2; ++rep) {
      plan.run(args, stream);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      std::vector<uint32_t> counts(static_cast<size_t>(sel.tiles_m));
      FLUX_CUDA_CHECK(cudaMemcpy(counts.data(), counters.ptr, counters.bytes, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < counts.size(); ++i) {
        ASSERT_EQ(counts[i], uint32_t(rep * sel.tiles_n)) << config << " M-block " << i << " after run " << rep;
      }
    }
  }
}

// A consumer that needs no SM: for each tile, a stream-ordered wait on the tile's flag, then a copy of
// the tile out of C. The consumer's stream is queued before the GEMM starts, so its 2 x tiles operations must
// fit the stream's queue (the host blocks on a full one; 512 did, 1024 hung on the H200): 256 tiles. The
// heuristic's config at M = 2048, and a swap-AB one at M = 1024 (its kernel stores C^T tiles; the flag names
// C's tile).
TEST(GemmCoreGpu, PublishedTilesAreCompleteWhenTheFlagIsSeen) {
  FLUX_REQUIRE_GPU();
  auto wait_value = driver_entry<StreamWaitValue32>("cuStreamWaitValue32");
  Stream gemm_stream, consumer;
  std::mt19937_64 rng(12);
  flux::GemmDesc desc{2048, 4096, flux::DType::kFP16, flux::WeightLayout::kNK};
  for (auto [config, m] : {std::pair<const char*, int64_t>{"", 2048}, {"64x128x64_pingpong_swapab_c1x2", 1024}}) {
    GemmProblem p(desc, m, false, rng(), gemm_stream);
    flux::GemmOptions options;
    options.config = config;
    flux::GemmPlan plan(desc, options);
    const flux::GemmSelection sel = plan.select(p.m);
    const int tm = sel.config.tile_m, tn = sel.config.tile_n;
    ASSERT_LE(sel.tiles_m * sel.tiles_n, 256) << sel.config.name << ": more consumer operations than the queue holds";
    DeviceBuffer flags(size_t(sel.tiles_m * sel.tiles_n) * sizeof(uint32_t));
    DeviceBuffer copy(p.c.bytes);
    PinnedBuffer host_copy(p.c.bytes);  // device -> host copies run on a copy engine, concurrently with the GEMM
    FLUX_CUDA_CHECK(cudaMemset(flags.ptr, 0, flags.bytes));
    std::memset(host_copy.ptr, 0xFF, p.c.bytes);
    p.poison_output(gemm_stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(gemm_stream));
    for (int64_t i = 0; i < sel.tiles_m; ++i) {
      for (int64_t j = 0; j < sel.tiles_n; ++j) {
        CUresult r = wait_value(consumer, reinterpret_cast<CUdeviceptr>(flags.as<uint32_t>() + i * sel.tiles_n + j), 1,
                                CU_STREAM_WAIT_VALUE_GEQ);
        ASSERT_EQ(r, CUDA_SUCCESS) << "cuStreamWaitValue32";
        size_t off = size_t(i * tm * desc.n + j * tn) * 2;
        FLUX_CUDA_CHECK(cudaMemcpy2DAsync(static_cast<char*>(host_copy.ptr) + off, size_t(desc.n) * 2,
                                          static_cast<char*>(p.c.ptr) + off, size_t(desc.n) * 2, size_t(tn) * 2,
                                          size_t(std::min<int64_t>(tm, p.m - i * tm)), cudaMemcpyDeviceToHost,
                                          consumer));
      }
    }
    flux::GemmArgs args = p.args();
    args.publish.mode = flux::PublishMode::kTileFlag;
    args.publish.flags = flags.as<uint32_t>();
    args.publish.value = 1;
    plan.run(args, gemm_stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(gemm_stream));
    FLUX_CUDA_CHECK(cudaStreamSynchronize(consumer));
    FLUX_CUDA_CHECK(cudaMemcpy(copy.ptr, host_copy.ptr, p.c.bytes, cudaMemcpyHostToDevice));
    // Compare the consumer's copy (not C) with the reference.
    auto r = flux::tools::compare_rows(desc.dtype, desc.n, copy.ptr, p.rows.as<int32_t>(), p.m, p.ref.as<double>(),
                                       gemm_stream);
    flux::testing::expect_close(r, desc.dtype, std::string("tiles copied out by a flag-waiting consumer, config '") +
                                                    config + "'");
  }
}

// The hooked GEMM under a CUDA graph: one capture, replays with the per-call value changed in device
// memory between replays (as the fused ops' epochs are). Every replay must wait for, and publish, the
// value of its own replay, not the one at capture; inputs are rewritten in place and checked each time.
TEST(GemmCoreGpu, HookValuesFromDeviceAreReadAtEveryReplay) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(21);
  flux::GemmDesc desc{768, 512, flux::DType::kBF16, flux::WeightLayout::kNK};
  GemmProblem p(desc, 700, true, rng(), stream);
  for (const char* config : {"", "16x64x128_pingpong_swapab_c1x1"}) {
    SCOPED_TRACE(std::string("config '") + config + "'");
    flux::GemmOptions options;
    options.config = config;
    flux::GemmPlan plan(desc, options);
    const flux::GemmSelection sel = plan.select(p.m);
    const size_t tiles = size_t(sel.tiles_m * sel.tiles_n);
    DeviceBuffer wait_flags(size_t(sel.tiles_m) * 4), pub(tiles * 4), value(4);
    flux::GemmArgs args = p.args();
    args.wait.flags = wait_flags.as<uint32_t>();
    args.wait.value_ptr = value.as<uint32_t>();
    args.publish.mode = flux::PublishMode::kTileFlag;
    args.publish.flags = pub.as<uint32_t>();
    args.publish.value_ptr = value.as<uint32_t>();
    auto set_all = [&](DeviceBuffer& b, size_t count, uint32_t v) {
      std::vector<uint32_t> host(count, v);
      FLUX_CUDA_CHECK(cudaMemcpy(b.ptr, host.data(), count * 4, cudaMemcpyHostToDevice));
    };
    // Capture with value 1 (flags released for 1).
    set_all(value, 1, 1u);
    set_all(wait_flags, size_t(sel.tiles_m), 1u);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    FLUX_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    plan.run(args, stream);
    FLUX_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    FLUX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    Stream replay;
    for (uint32_t v : {1000u, 0xFFFFFFFEu, 3u}) {  // 3 is past the 32-bit wrap from 0xFFFFFFFE
      set_all(value, 1, v);
      set_all(wait_flags, size_t(sel.tiles_m), v);
      flux::tools::fill_random(p.a.ptr, p.m * desc.k, desc.dtype, v, 1.0f, replay);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(replay));
      p.compute_reference(replay);
      p.poison_output(replay);
      FLUX_CUDA_CHECK(cudaGraphLaunch(exec, replay));
      FLUX_CUDA_CHECK(cudaStreamSynchronize(replay));
      EXPECT_NO_THROW(plan.check_status()) << "replay with value " << v;
      std::vector<uint32_t> host(tiles);
      FLUX_CUDA_CHECK(cudaMemcpy(host.data(), pub.ptr, tiles * 4, cudaMemcpyDeviceToHost));
      for (size_t t = 0; t < tiles; ++t) ASSERT_EQ(host[t], v) << "tile " << t << " published the wrong value";
      flux::testing::expect_close(p.compare(replay), desc.dtype, flux::detail::cat("replay with value ", v));
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
}

// Small case with every hook in use, for compute-sanitizer (scripts/gpu_check.sh runs it under memcheck).
TEST(GemmCoreGpu, SanitizerSmallCase) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(5);
  flux::GemmDesc desc{256, 512, flux::DType::kBF16, flux::WeightLayout::kNK};
  GemmProblem p(desc, 300, true, rng(), stream);
  flux::GemmOptions options;
  options.order.segments = 2;
  options.order.first_segment = 1;
  flux::GemmPlan plan(desc, options);
  const flux::GemmSelection sel = plan.select(p.m);
  DeviceBuffer wait_flags(size_t(sel.tiles_m) * 4), pub(size_t(sel.tiles_m * sel.tiles_n) * 4);
  FLUX_CUDA_CHECK(cudaMemset(wait_flags.ptr, 0x01, wait_flags.bytes));
  FLUX_CUDA_CHECK(cudaMemset(pub.ptr, 0, pub.bytes));
  flux::GemmArgs args = p.args();
  args.wait.flags = wait_flags.as<uint32_t>();
  args.wait.value = 1;
  args.publish.mode = flux::PublishMode::kTileFlag;
  args.publish.flags = pub.as<uint32_t>();
  p.poison_output(stream);
  plan.run(args, stream);
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  plan.check_status();
  flux::testing::expect_close(p.compare(stream), desc.dtype, "sanitizer case");
}

// Swap-AB configs compute C^T, yet the tile order and the hooks are in C's terms: every order (rasters, swizzles,
// row segments, column bands) gives the product, each call waiting on C's M-blocks (all released) and publishing
// exactly C's tiles (tiles_m != tiles_n, so a transposed index would miss flags or fall outside the grid).
TEST(GemmCoreGpu, SwapAbOrdersAndHooksInCsTerms) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(101);
  flux::GemmDesc desc{1000, 1024, flux::DType::kBF16, flux::WeightLayout::kNK};
  GemmProblem p(desc, 100, true, rng(), stream);
  uint32_t value = 0;
  for (const char* config :
       {"64x128x64_pingpong_swapab_c1x2", "16x64x128_pingpong_swapab_c1x1", "64x64x128_pingpong_swapab_c1x1"}) {
    for (int segments : {1, 3}) {
      for (int col_bands : {1, 3}) {
        for (flux::Raster raster : {flux::Raster::kRowMajor, flux::Raster::kColMajor}) {
          for (int swizzle : {1, 2, 8}) {
            const std::string what = flux::detail::cat(config, " W=", segments, " bands=", col_bands, " raster ",
                                                       int(raster), " swizzle ", swizzle);
            flux::GemmOptions options;
            options.config = config;
            options.order.segments = segments;
            options.order.first_segment = segments - 1;
            options.order.col_bands = col_bands;
            options.order.raster = raster;
            options.order.swizzle = swizzle;
            flux::GemmPlan plan(desc, options);
            const flux::GemmSelection sel = plan.select(p.m);
            ASSERT_TRUE(sel.config.swap_ab) << sel.reason;
            ASSERT_NE(sel.tiles_m, sel.tiles_n) << what;
            const size_t tiles = size_t(sel.tiles_m * sel.tiles_n);
            DeviceBuffer wait_flags(size_t(sel.tiles_m) * 4), pub(tiles * 4);
            ++value;
            std::vector<uint32_t> released(size_t(sel.tiles_m), value);
            FLUX_CUDA_CHECK(cudaMemcpy(wait_flags.ptr, released.data(), wait_flags.bytes, cudaMemcpyHostToDevice));
            FLUX_CUDA_CHECK(cudaMemset(pub.ptr, 0, pub.bytes));
            flux::GemmArgs args = p.args();
            args.wait.flags = wait_flags.as<uint32_t>();
            args.wait.value = value;
            args.publish.mode = flux::PublishMode::kTileFlag;
            args.publish.flags = pub.as<uint32_t>();
            args.publish.value = value;
            p.poison_output(stream);
            plan.run(args, stream);
            FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
            plan.check_status();
            std::vector<uint32_t> host(tiles);
            FLUX_CUDA_CHECK(cudaMemcpy(host.data(), pub.ptr, pub.bytes, cudaMemcpyDeviceToHost));
            for (size_t t = 0; t < tiles; ++t) ASSERT_EQ(host[t], value) << what << ": tile " << t << " not published";
            flux::testing::expect_close(p.compare(stream), desc.dtype, what);
          }
        }
      }
    }
  }
  // A plan that does not allow swap-AB never selects it.
  flux::GemmOptions no_swap;
  no_swap.allow_swap_ab = false;
  flux::GemmPlan plain(desc, no_swap);
  for (int64_t m : {1, 8, 64, 100}) EXPECT_FALSE(plain.select(m).config.swap_ab) << plain.select(m).reason;
}

// The swap-AB configs (the decode rule's and 64x128), unsplit and split, captured after one eager call (the split-K
// workspace for the stream exists) and replayed on another stream on new inputs, with eager calls mixed in
// (tests/support/graph_replay.h).
TEST(GemmCoreGpu, SwapAbGraphReplayWithNewInputs) {
  FLUX_REQUIRE_GPU();
  Stream capture, replay;
  std::mt19937_64 rng(808);
  for (const char* config :
       {"16x64x128_pingpong_swapab_c1x1", "64x64x128_pingpong_swapab_c1x1", "64x128x64_pingpong_swapab_c1x2"}) {
    for (int32_t splits : {1, 4}) {
      flux::GemmDesc desc{1544, 512 * splits, flux::DType::kBF16, flux::WeightLayout::kNK};
      GemmProblem p(desc, std::string(config).rfind("16x", 0) == 0 ? 5 : 40, true, rng(), capture);
      flux::GemmOptions options;
      options.config = config;
      options.split_k = splits;
      flux::GemmPlan plan(desc, options);
      ASSERT_EQ(plan.select(p.m).splits, splits) << plan.select(p.m).reason;
      plan.run(p.args(), capture);
      const int checked = flux::testing::capture_and_replay(
          capture, replay, 6, flux::testing::check_steps(rng(), 2, 6), 3,
          [&](int step, cudaStream_t s) {
            flux::tools::fill_random(p.a.ptr, p.m * desc.k, desc.dtype, uint64_t(2000 + step), 1.0f, s);
            p.compute_reference(s);
            p.poison_output(s);
          },
          [&](cudaStream_t s) { plan.run(p.args(), s); },
          [&](int step) {
            plan.check_status();
            flux::testing::expect_close(p.compare(replay), desc.dtype,
                                        flux::detail::cat(config, " split ", splits, " step ", step));
          });
      EXPECT_GE(checked, 1);
    }
  }
}

TEST(GemmCoreGpu, BadInputsAreRejectedBeforeLaunch) {
  FLUX_REQUIRE_GPU();
  EXPECT_THROW(flux::GemmPlan(flux::GemmDesc{1000, 1001, flux::DType::kBF16, flux::WeightLayout::kNK}),
               flux::InvalidArgument);
  flux::GemmOptions bad;
  bad.config = "256x256_magic";
  try {
    flux::GemmPlan plan(flux::GemmDesc{256, 256, flux::DType::kBF16, flux::WeightLayout::kNK}, bad);
    FAIL() << "unknown config accepted";
  } catch (const flux::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("128x256x64_coop_c2x1"), std::string::npos) << e.what();
  }
  Stream stream;
  std::mt19937_64 rng(3);
  flux::GemmDesc desc{256, 256, flux::DType::kBF16, flux::WeightLayout::kNK};
  GemmProblem p(desc, 64, false, rng(), stream);
  flux::GemmPlan plan(desc);
  flux::GemmArgs args = p.args();
  args.a = static_cast<const char*>(p.a.ptr) + 2;
  EXPECT_THROW(plan.run(args, stream), flux::InvalidArgument);
}

// Decide once (GemmArgs::selection): a call given select(M) computes the same bits as one that selects
// itself, for the heuristic's choices across regimes (skinny, split-K, TMA); a selection for another M
// (another tile grid) or one the plan has no kernel for is refused before anything is launched.
TEST(GemmCoreGpu, GivenSelectionIsTheCallsSelection) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(4242);
  for (int64_t m : {1, 7, 127, 333, 3000}) {
    flux::GemmDesc desc{random_dim(rng, 256, 6144), random_dim(rng, 512, 8192), flux::DType::kBF16,
                        flux::WeightLayout::kNK};
    GemmProblem p(desc, m, true, rng(), stream);
    flux::GemmPlan plan(desc);
    const flux::GemmSelection sel = plan.select(m);
    p.poison_output(stream);
    plan.run(p.args(), stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<char> own = flux::testing::to_host(p.c);
    p.poison_output(stream);
    flux::GemmArgs given = p.args();
    given.selection = &sel;
    plan.run(given, stream);
    const std::string what = case_name(desc, m, true, sel.config.name) + " splits " + std::to_string(sel.splits);
    flux::testing::expect_close(p.compare(stream), desc.dtype, what);
    EXPECT_EQ(0, std::memcmp(own.data(), flux::testing::to_host(p.c).data(), own.size())) << what;

    // A selection whose grid is not this M's (one more tile row: what select(M') gives for an M' one tile
    // taller) is refused. (A selection made for another M with the same grid is this M's and runs.)
    flux::GemmSelection other = sel;
    other.tiles_m += 1;
    given.selection = &other;
    try {
      plan.run(given, stream);
      ADD_FAILURE() << "a selection with " << other.tiles_m << " tile rows ran at M = " << m;
    } catch (const flux::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("tile grid"), std::string::npos) << e.what();
    }
  }
  // A plan built without swap-AB refuses a swap-AB selection made by a plan that allows it.
  flux::GemmDesc desc{4096, 4096, flux::DType::kBF16, flux::WeightLayout::kNK};
  GemmProblem p(desc, 8, false, rng(), stream);
  for (const flux::GemmConfigInfo& c : flux::gemm_configs()) {
    if (!c.swap_ab) continue;
    flux::GemmOptions forced;
    forced.config = c.name;
    flux::GemmPlan swapping(desc, forced);
    flux::GemmOptions no_swap;
    no_swap.allow_swap_ab = false;
    flux::GemmPlan plain(desc, no_swap);
    const flux::GemmSelection s = swapping.select(8);
    flux::GemmArgs given = p.args();
    given.selection = &s;
    try {
      plain.run(given, stream);
      ADD_FAILURE() << "swap-AB selection ran on a plan without swap-AB";
    } catch (const flux::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("allow_swap_ab"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
