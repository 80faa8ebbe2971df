// tools/bench/bench_gemm_ar.cpp — `flux-bench gemm-ar`, run as W ranks (flux-run -n W -- flux-bench gemm-ar).
//
// Per shape (M, N, K: the full layer; each rank multiplies A_r [M, K/W] by B_r [N, K/W]^T and every rank
// gets the sum [M, N]) and dtype, side by side in interleaved rounds on rotating input sets: one_shot,
// two_shot, rs_ag, sequential, decomposed (the op's paths), one_shot_graph (one one-shot call captured in a CUDA graph
// and replayed: the decode case), gemm_core (the per-rank GEMM alone) and, with one GPU per rank,
// nccl_comm (NCCL's all-reduce of the partials alone). fixed_us = path - gemm_core, the op's cost over
// its GEMM. Each rank times its own calls; a row reports the slowest rank's median. The one- and two-shot
// outputs are checked on every rank against fp64 from every rank's inputs (sampled rows) and across ranks (the
// same bits). Default suite: decode and prefill M in {1, 8, 32, 64, 128, 1024, 4096}, N = 8192,
// K = 8192 (Llama-style attention-out / MLP-down rows).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "flux/gemm_ar.h"
#include "src/common/check.h"
#include "src/common/nccl_check.h"
#include "tools/bench/bench_args.h"
#include "tools/bench/bench_gemm_ar.h"
#include "tools/bench/bench_ranks.h"
#include "tools/common/device_tools.h"
#include "tools/common/json.h"
#include "tools/common/timing.h"

namespace flux::bench {

namespace {

using Buffer = flux::tools::DeviceBuffer;

uint64_t input_seed(uint64_t base, int set, int rank, int what) {
  return base * 6364136223846793005ull + uint64_t(set) * 1000003ull + uint64_t(rank) * 7919ull + uint64_t(what);
}

// FNV-1a of a device buffer's bits.
std::string bits_hash(const void* p, size_t bytes) {
  std::vector<unsigned char> host(bytes);
  FLUX_CUDA_CHECK(cudaMemcpy(host.data(), p, bytes, cudaMemcpyDeviceToHost));
  uint64_t h = 1469598103934665603ull;
  for (unsigned char x : host) h = (h ^ x) * 1099511628211ull;
  return std::to_string(h);
}

}  // namespace

int run_gemm_ar_bench(const std::vector<std::string>& argv, const std::string& command_line) {
  FusedBench bench(argv, {"gemm-ar", {1, 8, 32, 64, 128, 1024, 4096}, 8192, 8192, 5, 30, false});
  bench.print_banner("; NCCL unavailable: no nccl_comm row");
  if (bench.r == 0) {
    std::printf("%-18s %-5s %9s %9s %9s %9s %9s %9s %9s %9s  (ms; fixed_us = one_shot - core)\n", "shape (MxNxK)",
                "dtype", "one_shot", "graph", "sequent.", "decomp.", "core", "two_shot", "rs_ag", "fixed_us");
  }
  Communicator& comm = bench.comm;
  const int w = bench.w, r = bench.r;
  const WeightLayout layout = bench.layout;
  std::ofstream* json = bench.json.get();
  cudaStream_t stream = bench.stream;
  cudaStream_t capture = nullptr;  // the graph row's capture stream
  FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
  int failures = 0;
  for (DType dtype : bench.dtypes) {
    for (const Shape& shape : bench.shapes) {
      const int64_t m = shape.m, n = shape.n, k = shape.k / w;
      FLUX_CHECK_ARG(shape.k % w == 0, "flux-bench gemm-ar: shape ", m, "x", n, "x", shape.k, " (K must be a multiple of W = ", w,
                     ")");
      const size_t es = dtype_size(dtype);
      const int64_t set_bytes = (m * k + n * k) * int64_t(es);
      const int sets = tools::rotating_sets(set_bytes, bench.limits.l2_bytes, 8);
      std::vector<std::unique_ptr<Buffer>> a, b;
      for (int s = 0; s < sets; ++s) {
        a.push_back(std::make_unique<Buffer>(size_t(m * k) * es));
        b.push_back(std::make_unique<Buffer>(size_t(n * k) * es));
        tools::fill_random(a[s]->ptr, m * k, dtype, input_seed(m, s, r, 1), 1.0f, stream);
        tools::fill_random(b[s]->ptr, n * k, dtype, input_seed(m, s, r, 2), 1.0f, stream);
      }
      Buffer out(size_t(m * n) * es), partial(size_t(m * n) * es);
      GemmArPlan plan(comm, GemmArDesc{m, n, k, dtype, layout});
      GemmPlan core(GemmDesc{n, k, dtype, layout});
      auto ar_args = [&](int set) {
        GemmArArgs x;
        x.a = TensorRef(a[set]->ptr, m, k, dtype);
        x.b = layout == WeightLayout::kNK ? TensorRef(b[set]->ptr, n, k, dtype) : TensorRef(b[set]->ptr, k, n, dtype);
        x.out = TensorRef(out.ptr, m, n, dtype);
        return x;
      };
      // One one-shot call on set 0, captured once (a decode step replays the same buffers).
      plan.run(ar_args(0), capture, GemmArPath::kOneShot);  // eager first: the plan's first call
      FLUX_CUDA_CHECK(cudaStreamSynchronize(capture));
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      FLUX_CUDA_CHECK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal));
      plan.run(ar_args(0), capture, GemmArPath::kOneShot);
      FLUX_CUDA_CHECK(cudaStreamEndCapture(capture, &graph));
      FLUX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      int call = 0;
      auto next_set = [&] { return (call++) % sets; };
      std::vector<tools::TimedRun> runs = {
          {"one_shot", [&](int) { plan.run(ar_args(next_set()), stream, GemmArPath::kOneShot); }},
          {"one_shot_graph", [&](int) { FLUX_CUDA_CHECK(cudaGraphLaunch(exec, stream)); }},
          {"sequential", [&](int) { plan.run(ar_args(next_set()), stream, GemmArPath::kSequential); }},
          {"decomposed", [&](int) { plan.run(ar_args(next_set()), stream, GemmArPath::kDecomposed); }},
          {"gemm_core", [&](int) {
             GemmArgs g;
             const int s = next_set();
             g.m = m;
             g.a = a[s]->ptr;
             g.b = b[s]->ptr;
             g.c = partial.ptr;
             core.run(g, stream);
           }},
          {"two_shot", [&](int) { plan.run(ar_args(next_set()), stream, GemmArPath::kTwoShot); }},
          {"rs_ag", [&](int) { plan.run(ar_args(next_set()), stream, GemmArPath::kRsAg); }},
      };
      if (bench.nccl) {
        runs.push_back({"nccl_comm", [&](int) {
                          FLUX_NCCL_CHECK(ncclAllReduce(partial.ptr, out.ptr, size_t(m * n), detail::nccl_data_type(dtype), ncclSum,
                                                        comm.nccl(), stream));
                        }});
      }
      comm.barrier("gemm-ar bench start");
      auto times = tools::time_interleaved(runs, stream, bench.warmup, bench.iters);
      plan.check_status();
      std::vector<double> med(runs.size());
      for (size_t i = 0; i < runs.size(); ++i) med[i] = max_over_ranks(comm, tools::median(times[i]), "gemm-ar median");
      // The fused paths on set 0: sampled rows against fp64 from every rank's inputs, and the same bits
      // everywhere.
      std::map<std::string, std::optional<double>> errs;
      std::map<std::string, bool> same;
      for (GemmArPath path : {GemmArPath::kOneShot, GemmArPath::kTwoShot, GemmArPath::kRsAg}) {
        if (!bench.check) break;
        std::optional<double>& err = errs[to_string(path)];
        bool& same_bits = same[to_string(path)];
        same_bits = true;
        tools::poison(out.ptr, m * n, stream);
        plan.run(ar_args(0), stream, path);
        FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
        plan.check_status();
        std::vector<std::string> hashes = comm.all_gather(bits_hash(out.ptr, out.bytes), "gemm-ar bits");
        for (const std::string& h : hashes) same_bits = same_bits && h == hashes[0];
        const int64_t count = std::min<int64_t>(m, bench.check_rows);
        std::vector<int32_t> rows;
        std::mt19937_64 rng(uint64_t(m) * 31);
        for (int64_t i = 0; i < count; ++i) rows.push_back(static_cast<int32_t>(i == 0 ? 0 : (i == 1 ? m - 1 : int64_t(rng() % uint64_t(m)))));
        Buffer d_rows(rows.size() * 4), ref(size_t(count * n) * 8), part_ref(size_t(count * n) * 8), ta(size_t(m * k) * es),
            tb(size_t(n * k) * es);
        FLUX_CUDA_CHECK(cudaMemcpy(d_rows.ptr, rows.data(), rows.size() * 4, cudaMemcpyHostToDevice));
        std::vector<double> total(size_t(count * n), 0.0), piece(size_t(count * n));
        for (int s = 0; s < w; ++s) {
          tools::fill_random(ta.ptr, m * k, dtype, input_seed(m, 0, s, 1), 1.0f, stream);
          tools::fill_random(tb.ptr, n * k, dtype, input_seed(m, 0, s, 2), 1.0f, stream);
          tools::reference_gemm_rows(dtype, layout, n, k, ta.ptr, tb.ptr, nullptr, static_cast<int32_t*>(d_rows.ptr), count,
                                     static_cast<double*>(part_ref.ptr), stream);
          FLUX_CUDA_CHECK(cudaMemcpyAsync(piece.data(), part_ref.ptr, piece.size() * 8, cudaMemcpyDeviceToHost, stream));
          FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
          for (size_t i = 0; i < total.size(); ++i) total[i] += piece[i];
        }
        FLUX_CUDA_CHECK(cudaMemcpy(ref.ptr, total.data(), total.size() * 8, cudaMemcpyHostToDevice));
        // Row i of the check is row rows[i] of out: compare through an index map of the sampled rows.
        tools::CompareResult cr = tools::compare_rows(dtype, n, out.ptr, static_cast<int32_t*>(d_rows.ptr), count,
                                                      static_cast<double*>(ref.ptr), stream);
        err = max_over_ranks(comm, cr.nonfinite > 0 ? 1e30 : cr.max_row_rel, "gemm-ar err");
        if (!(*err < tools::tolerance(dtype)) || !same_bits) ++failures;
      }
      const double core_ms = med[4];
      if (json) {
        for (size_t i = 0; i < runs.size(); ++i) {
          tools::JsonLine line;
          line.add("op", "gemm_ar").add("impl", runs[i].name).add("dtype", to_string(dtype)).add("m", m).add("n", n)
              .add("k", shape.k).add("world_size", w).add("median_ms", med[i]);
          if (runs[i].name != "nccl_comm" && runs[i].name != "gemm_core") line.add("fixed_us", (med[i] - core_ms) * 1e3);
          const bool checked = errs.count(runs[i].name) > 0;
          line.add("max_rel_err", checked ? errs[runs[i].name] : std::nullopt).add("k_per_rank", k)
              .add("layout", to_string(layout));
          if (checked) line.add("same_bits_on_every_rank", same[runs[i].name]);
          if (runs[i].name == "one_shot") line.add("rule", plan.layout(m).reason);
          bench.add_run_fields(line, command_line);
          *json << line.str() << "\n";
        }
        json->flush();
      }
      if (r == 0) {
        char shape_text[64];
        std::snprintf(shape_text, sizeof(shape_text), "%ldx%ldx%ld", long(m), long(n), long(shape.k));
        bool failed = false;
        for (const auto& e : errs) failed = failed || !(*e.second < tools::tolerance(dtype)) || !same[e.first];
        std::printf("%-18s %-5s %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f %9.1f%s\n", shape_text, to_string(dtype), med[0],
                    med[1], med[2], med[3], core_ms, med[5], med[6], (med[0] - core_ms) * 1e3, failed ? "  CHECK FAILED" : "");
        std::fflush(stdout);
      }
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      comm.barrier("gemm-ar shape done");
      plan.release();
    }
  }
  FLUX_CUDA_CHECK(cudaStreamDestroy(capture));
  bench.finish();
  if (failures > 0) {
    if (r == 0) std::printf("flux-bench gemm-ar: %d correctness checks FAILED\n", failures);
    return 3;
  }
  return 0;
}

}  // namespace flux::bench
