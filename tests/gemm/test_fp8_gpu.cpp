// tests/gemm/test_fp8_gpu.cpp — the FP8 GEMM core on the GPU: e4m3 A and B (values drawn so that e4m3
// rounding is exercised), bf16 / fp16 C, per-tensor and per-row / per-column scales (never 1), against
// the fp64 reference built from the dequantized inputs, outputs poisoned first; every FP8 config at
// M in {1, 7, 127, 1000, 3000} with random N, K (N not a multiple of any tile), with and without bias;
// the lagged promotion's loop tails (odd and even k-tile counts, one k-tile); the FP8 skinny config and its split-K; bitwise
// repeatability; the three extension points; scales read at every CUDA-graph replay; bad inputs.
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
#include "tests/support/graph_replay.h"

namespace {

using flux::DType;
using flux::ScaleKind;
using flux::WeightLayout;
using flux::testing::DeviceBuffer;
using flux::testing::GemmProblem;
using flux::testing::Stream;

flux::GemmDesc fp8_desc(int64_t n, int64_t k, DType out, ScaleKind scale) {
  return flux::GemmDesc{n, k, DType::kE4M3, WeightLayout::kNK, out, scale};
}

// A random multiple of 16 in [lo, hi] (FP8 K), and N a multiple of 8 that no tile width divides.
int64_t random_k(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return 16 * std::uniform_int_distribution<int64_t>(lo / 16, hi / 16)(rng);
}
int64_t random_ragged_n(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  int64_t n = 0;
  do {
    n = flux::testing::random_dim(rng, lo, hi);
  } while (n % 64 == 0);
  return n;
}

std::string fp8_case(const flux::GemmDesc& d, int64_t m, bool bias, const std::string& config) {
  return flux::detail::cat(config, " e4m3->", flux::to_string(d.out_dtype), " ", flux::to_string(d.scale), " M=", m,
                           " N=", d.n, " K=", d.k, bias ? " +bias" : "");
}

std::vector<const flux::GemmConfigInfo*> fp8_configs() {
  std::vector<const flux::GemmConfigInfo*> out;
  for (const flux::GemmConfigInfo& c : flux::gemm_configs()) {
    if (c.fp8) out.push_back(&c);
  }
  return out;
}

// The scales are device values read at every launch: one call of `plan` captured in a CUDA graph (after an eager
// call: any per-stream setup, such as the split-K workspace), then replayed twice, each time after new scales (and the
// reference from them) are written and the output poisoned.
void expect_replays_read_new_scales(const flux::GemmPlan& plan, GemmProblem& p, std::mt19937_64& rng,
                                    cudaStream_t stream, const std::string& label) {
  const bool vectors = p.desc.scale == ScaleKind::kPerRowCol;
  plan.run(p.args(), stream);
  const int checked = flux::testing::capture_and_replay(
      stream, stream, 2, {0, 1}, 0,
      [&](int step, cudaStream_t s) {
        if (step < 0) return;
        flux::tools::fill_scales(p.scale_a.as<float>(), vectors ? p.m : 1, rng(), 0.25f, 4.0f, s);
        flux::tools::fill_scales(p.scale_b.as<float>(), vectors ? p.desc.n : 1, rng(), 0.002f, 0.05f, s);
        p.compute_reference(s);
        p.poison_output(s);
      },
      [&](cudaStream_t s) { plan.run(p.args(), s); },
      [&](int step) {
        flux::testing::expect_close(p.compare(stream), p.desc.out_dtype,
                                    label + " graph replay " + std::to_string(step));
      });
  EXPECT_EQ(checked, 2) << label;
}

TEST(Fp8GemmGpu, EveryConfigAgainstTheDequantizedReference) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(808);
  ASSERT_EQ(fp8_configs().size(), 6u);
  int cases = 0;
  for (int64_t m : {1, 7, 127, 1000, 3000}) {
    for (DType out : {DType::kBF16, DType::kFP16}) {
      for (ScaleKind scale : {ScaleKind::kPerTensor, ScaleKind::kPerRowCol}) {
        const flux::GemmDesc desc = fp8_desc(random_ragged_n(rng, 200, 3000), random_k(rng, 128, 4096), out, scale);
        const bool bias = (cases++ % 2) == 0;
        GemmProblem p(desc, m, bias, rng(), stream);
        for (const flux::GemmConfigInfo* c : fp8_configs()) {
          flux::GemmOptions options;
          options.config = c->name;
          flux::GemmPlan plan(desc, options);
          p.poison_output(stream);
          plan.run(p.args(), stream);
          flux::testing::expect_close(p.compare(stream), out, fp8_case(desc, m, bias, c->name));
        }
        // The heuristic's choice among them.
        flux::GemmPlan plan(desc);
        const flux::GemmSelection sel = plan.select(m);
        EXPECT_TRUE(sel.config.fp8) << sel.reason;
        p.poison_output(stream);
        plan.run(p.args(), stream);
        flux::testing::expect_close(p.compare(stream), out, fp8_case(desc, m, bias, "auto") + ": " + sel.reason);
      }
    }
  }
}

// The lagged promotion (lagged_fp8_mainloop.cuh: two sets of partial sums taking turns per k-tile, each added into
// the fp32 accumulators one k-tile late) at every shape of its loop: K of 1 k-tile (no loop, one set), 2 (the loop
// never runs, the even tail), 3 (one pass, the odd tail), 13 and a ragged 1040 (8.125 k-tiles: the last one
// partial, TMA's zero fill), on every FP8 config.
TEST(Fp8GemmGpu, LaggedPromotionEveryLoopTail) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(1717);
  int cases = 0;
  for (int64_t k : {128, 256, 384, 1664, 1040}) {
    const DType out = (cases % 2) == 0 ? DType::kFP16 : DType::kBF16;
    const flux::GemmDesc desc = fp8_desc(random_ragged_n(rng, 300, 1500), k, out, ScaleKind::kPerRowCol);
    const bool bias = (cases++ % 3) == 0;
    GemmProblem p(desc, 1000, bias, rng(), stream);
    for (const flux::GemmConfigInfo* c : fp8_configs()) {
      flux::GemmOptions options;
      options.config = c->name;
      flux::GemmPlan plan(desc, options);
      p.poison_output(stream);
      plan.run(p.args(), stream);
      flux::testing::expect_close(p.compare(stream), out, fp8_case(desc, 1000, bias, c->name) + " K " + std::to_string(k));
    }
  }
}

TEST(Fp8GemmGpu, RepeatsBitwise) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(909);
  for (ScaleKind scale : {ScaleKind::kPerTensor, ScaleKind::kPerRowCol}) {
    const flux::GemmDesc desc = fp8_desc(2056, 3072, DType::kBF16, scale);
    GemmProblem p(desc, 1000, true, rng(), stream);
    flux::GemmPlan plan(desc);
    plan.run(p.args(), stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<char> first = flux::testing::to_host(p.c);
    for (int rep = 0; rep < 3; ++rep) {
      p.poison_output(stream);
      plan.run(p.args(), stream);
      FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
      ASSERT_EQ(0, std::memcmp(first.data(), flux::testing::to_host(p.c).data(), first.size()))
          << flux::to_string(scale) << " run " << rep;
    }
  }
}

// Tile order, wait-before-load and publish-after-store on the FP8 kernels: a segmented, rank-rotated order
// gives the same product; flags already released let every M-block load; every tile is published.
TEST(Fp8GemmGpu, ExtensionPoints) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(1010);
  const flux::GemmDesc desc = fp8_desc(1096, 2048, DType::kBF16, ScaleKind::kPerRowCol);
  GemmProblem p(desc, 1500, true, rng(), stream);
  for (const flux::GemmConfigInfo* c : fp8_configs()) {
    flux::GemmOptions options;
    options.config = c->name;
    options.order.segments = 3;
    options.order.first_segment = 1;
    flux::GemmPlan plan(desc, options);
    const flux::GemmSelection sel = plan.select(p.m);
    const size_t tiles = size_t(sel.tiles_m * sel.tiles_n);
    DeviceBuffer publish(tiles * sizeof(uint32_t)), ready(size_t(sel.tiles_m) * sizeof(uint32_t));
    FLUX_CUDA_CHECK(cudaMemset(publish.ptr, 0, publish.bytes));
    std::vector<uint32_t> fives(static_cast<size_t>(sel.tiles_m), 5u);
    FLUX_CUDA_CHECK(cudaMemcpy(ready.ptr, fives.data(), ready.bytes, cudaMemcpyHostToDevice));
    flux::GemmArgs args = p.args();
    args.wait.flags = ready.as<uint32_t>();
    args.wait.value = 5;
    args.publish.mode = flux::PublishMode::kTileFlag;
    args.publish.flags = publish.as<uint32_t>();
    args.publish.value = 9;
    p.poison_output(stream);
    plan.run(args, stream);
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    plan.check_status();
    std::vector<uint32_t> host(tiles);
    FLUX_CUDA_CHECK(cudaMemcpy(host.data(), publish.ptr, publish.bytes, cudaMemcpyDeviceToHost));
    for (size_t t = 0; t < tiles; ++t) ASSERT_EQ(host[t], 9u) << c->name << " tile " << t << " not published";
    flux::testing::expect_close(p.compare(stream), desc.out_dtype, std::string("hooks + order ") + c->name);
  }
}

// The scales are device values read at every launch: a graph captured once and replayed after new scales
// are written computes with the new ones.
TEST(Fp8GemmGpu, GraphReplayReadsTheCurrentScales) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(1111);
  for (ScaleKind scale : {ScaleKind::kPerTensor, ScaleKind::kPerRowCol}) {
    const flux::GemmDesc desc = fp8_desc(1544, 1024, DType::kFP16, scale);
    GemmProblem p(desc, 333, true, rng(), stream);
    expect_replays_read_new_scales(flux::GemmPlan(desc), p, rng, stream, flux::to_string(scale));
  }
}

// The FP8 skinny config (16x64x256_skinny_e4m3: mma.sync e4m3, src/gemm/kernel/skinny_gemm.cuh) unsplit and split-K
// (fp32 partials, scaled by the reduction) against the dequantized reference at decode M and a few tile rows, both
// scale kinds and output types, with and without bias; a captured split call replayed with new scales; a split whose
// slices are 8 (not 16) e4m3 elements deep refused.
TEST(Fp8GemmGpu, SkinnySplitK) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(2323);
  const std::string skinny = "16x64x256_skinny_e4m3";
  int cases = 0;
  for (int64_t m : {1, 5, 16, 40}) {
    for (ScaleKind scale : {ScaleKind::kPerTensor, ScaleKind::kPerRowCol}) {
      const DType out = (cases % 2) == 0 ? DType::kFP16 : DType::kBF16;
      const int64_t k = std::vector<int64_t>{4096, 3072, 4608}[size_t(cases % 3)];
      const flux::GemmDesc desc = fp8_desc(random_ragged_n(rng, 200, 2000), k, out, scale);
      const bool bias = (cases++ % 3) != 1;
      GemmProblem p(desc, m, bias, rng(), stream);
      for (int32_t splits : {1, 2, 3, 4, 16}) {
        if (splits > 1 && !flux::split_k_divides(k, splits, DType::kE4M3)) continue;
        flux::GemmOptions options;
        options.config = skinny;
        options.split_k = splits;
        flux::GemmPlan plan(desc, options);
        EXPECT_EQ(plan.select(m).splits, splits);
        p.poison_output(stream);
        plan.run(p.args(), stream);
        flux::testing::expect_close(p.compare(stream), out,
                                    fp8_case(desc, m, bias, skinny) + " split " + std::to_string(splits));
      }
    }
  }
  // Graph replay of a split call: the reduction reads the scales written after capture.
  const flux::GemmDesc desc = fp8_desc(1032, 4096, DType::kBF16, ScaleKind::kPerRowCol);
  GemmProblem p(desc, 7, true, rng(), stream);
  flux::GemmOptions options;
  options.config = skinny;
  options.split_k = 4;
  flux::GemmPlan plan(desc, options);
  expect_replays_read_new_scales(plan, p, rng, stream, "split-K 4");
  // K = 4112 = 2 x 2056: slices of 2056 e4m3 elements, a multiple of 8 but not of 16 (16 bytes).
  flux::GemmOptions odd;
  odd.config = skinny;
  odd.split_k = 2;
  EXPECT_THROW(flux::GemmPlan(fp8_desc(1032, 4112, DType::kBF16, ScaleKind::kPerTensor), odd), flux::InvalidArgument);
}

TEST(Fp8GemmGpu, BadInputsAreRejectedBeforeLaunch) {
  FLUX_REQUIRE_GPU();
  Stream stream;
  std::mt19937_64 rng(1212);
  const flux::GemmDesc desc = fp8_desc(512, 512, DType::kBF16, ScaleKind::kPerRowCol);
  GemmProblem p(desc, 64, false, rng(), stream);
  flux::GemmPlan plan(desc);
  auto message = [&](const flux::GemmArgs& args) {
    try {
      plan.run(args, stream);
    } catch (const flux::InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  flux::GemmArgs args = p.args();
  args.scale_b = nullptr;
  EXPECT_NE(message(args).find("needs scale_a and scale_b"), std::string::npos);
  args = p.args();
  args.scale_a = reinterpret_cast<const float*>(static_cast<const char*>(p.scale_a.ptr) + 4);
  EXPECT_NE(message(args).find("16-byte aligned fp32 vectors"), std::string::npos);
  // A [K, N] weight and a 16-bit config are refused by name.
  EXPECT_THROW(flux::GemmPlan(flux::GemmDesc{512, 512, DType::kE4M3, WeightLayout::kKN, DType::kBF16,
                                             ScaleKind::kPerTensor}),
               flux::InvalidArgument);
  flux::GemmOptions sixteen;
  sixteen.config = "128x128x64_pingpong_c1x2";
  EXPECT_THROW(flux::GemmPlan(desc, sixteen), flux::Unsupported);
  // Scales given to a bf16 plan.
  const flux::GemmDesc bf16{512, 512, DType::kBF16, WeightLayout::kNK};
  GemmProblem q(bf16, 64, false, rng(), stream);
  flux::GemmPlan plain(bf16);
  flux::GemmArgs with_scales = q.args();
  with_scales.scale_a = p.scale_a.as<float>();
  EXPECT_THROW(plain.run(with_scales, stream), flux::InvalidArgument);
}

}  // namespace
