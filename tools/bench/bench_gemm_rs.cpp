// tools/bench/bench_gemm_rs.cpp — `flux-bench gemm-rs`, run as W ranks (flux-run -n W -- flux-bench gemm-rs).
//
// Per shape (M, N, K: the full layer; each rank multiplies A_r [M, K/W] by B_r [N, K/W]^T) and dtype,
// side by side in interleaved rounds on rotating input sets: flux (the op's fused path), sequential,
// decomposed, cublas_gemm (the per-rank GEMM alone, cuBLAS tuned), gemm_core (the per-rank GEMM alone,
// Flux's core) and nccl_comm (NCCL's reduce-scatter of the partials alone; only when every rank has
// its own GPU). hidden = (cublas_gemm + nccl_comm - flux) / nccl_comm where nccl_comm is known.
// Each rank times its own calls; a row reports the slowest rank's median. The fused output is
// checked on sampled rows of every rank against fp64 built from every rank's inputs.
// Default suite: DESIGN.md's full-layer GEMM+RS shapes, M in {1024, 2048, 4096, 8192, 16384},
// N = 12288, K = 49152. FP8 rows (--dtypes e4m3): out and partials in --out-dtype, each rank's scales per
// --scale (bench_operands.h); every implementation, cuBLASLt included, runs FP8 with the same scales.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "flux/baseline/cublas_gemm.h"
#include "flux/gemm_rs.h"
#include "src/common/check.h"
#include "src/common/nccl_check.h"
#include "tools/bench/bench_args.h"
#include "tools/bench/bench_operands.h"
#include "tools/bench/bench_ranks.h"
#include "tools/bench/bench_gemm_rs.h"
#include "tools/common/device_tools.h"
#include "tools/common/json.h"
#include "tools/common/timing.h"

namespace flux::bench {

namespace {

using Buffer = flux::tools::DeviceBuffer;

uint64_t input_seed(uint64_t base, int set, int rank, int what) {
  return base * 6364136223846793005ull + uint64_t(set) * 1000003ull + uint64_t(rank) * 7919ull + uint64_t(what);
}

}  // namespace

int run_gemm_rs_bench(const std::vector<std::string>& argv, const std::string& command_line) {
  FusedBench bench(argv, {"gemm-rs", {1024, 2048, 4096, 8192, 16384}, 12288, 49152, 3, 20, true});
  bench.print_banner("; NCCL unavailable: no nccl_comm row, no hidden");
  if (bench.r == 0) {
    std::printf("%-20s %-5s %9s %9s %9s %9s %9s %9s %8s %s\n", "shape (MxNxK)", "dtype", "flux", "sequent.", "decomp.",
                "cublas", "core", "nccl", "hidden", "path");
  }
  Communicator& comm = bench.comm;
  const int w = bench.w, r = bench.r;
  const WeightLayout layout = bench.layout;
  std::ofstream* json = bench.json.get();
  cudaStream_t stream = bench.stream;
  int failures = 0;
  for (DType dtype : bench.dtypes) {
    for (const Shape& shape : bench.shapes) {
      const int64_t m = shape.m, n = shape.n, k = shape.k / w, seg = m / w;
      FLUX_CHECK_ARG(shape.k % w == 0 && m % w == 0, "flux-bench gemm-rs: shape ", m, "x", n, "x", shape.k,
                     " (M and K must be multiples of W = ", w, ")");
      const OpBenchTypes types = op_bench_types(dtype, bench.args);
      const size_t es = dtype_size(dtype), out_es = dtype_size(types.out);
      const int64_t set_bytes = (m * k + n * k) * int64_t(es);
      const int sets = tools::rotating_sets(set_bytes, bench.limits.l2_bytes, 8);
      std::vector<std::unique_ptr<Buffer>> a, b;
      for (int s = 0; s < sets; ++s) {
        a.push_back(std::make_unique<Buffer>(size_t(m * k) * es));
        b.push_back(std::make_unique<Buffer>(size_t(n * k) * es));
        tools::fill_random(a[s]->ptr, m * k, dtype, input_seed(m, s, r, 1), types.a_range(), stream);
        tools::fill_random(b[s]->ptr, n * k, dtype, input_seed(m, s, r, 2), 1.0f, stream);
      }
      Buffer out(size_t(seg * n) * out_es), partial(size_t(m * n) * out_es), recv(size_t(seg * n) * out_es);
      auto scales_of = [&](int rank) {  // FP8: a rank's scale_a over its M rows and scale_b over N
        return OpBenchScales(types, m, n, input_seed(m, 0, rank, 4), input_seed(m, 0, rank, 5), stream);
      };
      const OpBenchScales scales = scales_of(r);
      GemmRsPlan plan(comm, GemmRsDesc{m, n, k, dtype, layout, types.out, types.scale});
      const GemmRsLayout fused_layout = plan.layout(m, GemmRsImpl::kFused);
      GemmPlan core(types.core(n, k, layout));
      CublasGemm cublas(types.core(n, k, layout), m, false);
      GemmArgs g0;
      g0.m = m;
      g0.a = a[0]->ptr;
      g0.b = b[0]->ptr;
      g0.c = partial.ptr;
      g0.scale_a = scales.sa();
      g0.scale_b = scales.sb();
      cublas.tune(g0, stream, 3);
      auto rs_args = [&](int set) {
        GemmRsArgs x;
        x.a = TensorRef(a[set]->ptr, m, k, dtype);
        x.b = layout == WeightLayout::kNK ? TensorRef(b[set]->ptr, n, k, dtype) : TensorRef(b[set]->ptr, k, n, dtype);
        x.out = TensorRef(out.ptr, seg, n, types.out);
        x.scale_a = scales.a_ref();
        x.scale_b = scales.b_ref();
        return x;
      };
      int call = 0;
      auto next_set = [&] { return (call++) % sets; };
      std::vector<tools::TimedRun> runs = {
          {"flux", [&](int) { plan.run(rs_args(next_set()), stream, GemmRsImpl::kFused); }},
          {"sequential", [&](int) { plan.run(rs_args(next_set()), stream, GemmRsImpl::kSequential); }},
          {"decomposed", [&](int) { plan.run(rs_args(next_set()), stream, GemmRsImpl::kDecomposed); }},
          {"cublas_gemm", [&](int) {
             GemmArgs g = g0;
             int s = next_set();
             g.a = a[s]->ptr;
             g.b = b[s]->ptr;
             cublas.run(g, stream);
           }},
          {"gemm_core", [&](int) {
             GemmArgs g = g0;
             int s = next_set();
             g.a = a[s]->ptr;
             g.b = b[s]->ptr;
             core.run(g, stream);
           }},
      };
      if (bench.nccl) {
        runs.push_back({"nccl_comm", [&](int) {
                          FLUX_NCCL_CHECK(ncclReduceScatter(partial.ptr, recv.ptr, size_t(seg * n),
                                                            detail::nccl_data_type(types.out), ncclSum,
                                                            comm.nccl(), stream));
                        }});
      }
      comm.barrier("gemm-rs bench start");
      auto times = tools::time_interleaved(runs, stream, bench.warmup, bench.iters);
      plan.check_status();
      // The slowest rank's median for each implementation.
      std::vector<double> med(runs.size());
      for (size_t i = 0; i < runs.size(); ++i) {
        med[i] = max_over_ranks(comm, tools::median(times[i]), "gemm-rs median");
      }
      // Check the fused output on sampled rows against fp64 from every rank's inputs (set 0).
      std::optional<double> err;
      if (bench.check) {
        plan.run(rs_args(0), stream, GemmRsImpl::kFused);
        FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
        plan.check_status();
        const int64_t count = std::min<int64_t>(seg, bench.check_rows);
        std::vector<int32_t> local_rows, global_rows;
        std::mt19937_64 rng(uint64_t(m) * 31 + uint64_t(r));
        for (int64_t i = 0; i < count; ++i) {
          int32_t lr = static_cast<int32_t>(i == 0 ? 0 : (i == 1 ? seg - 1 : int64_t(rng() % uint64_t(seg))));
          local_rows.push_back(lr);
          global_rows.push_back(static_cast<int32_t>(r * seg + lr));
        }
        Buffer d_local(local_rows.size() * 4), d_global(global_rows.size() * 4), ref(size_t(count * n) * 8),
            part_ref(size_t(count * n) * 8), ta(size_t(m * k) * es), tb(size_t(n * k) * es);
        FLUX_CUDA_CHECK(cudaMemcpy(d_local.ptr, local_rows.data(), local_rows.size() * 4, cudaMemcpyHostToDevice));
        FLUX_CUDA_CHECK(cudaMemcpy(d_global.ptr, global_rows.data(), global_rows.size() * 4, cudaMemcpyHostToDevice));
        std::vector<double> total(size_t(count * n), 0.0), piece(size_t(count * n));
        for (int s = 0; s < w; ++s) {
          tools::fill_random(ta.ptr, m * k, dtype, input_seed(m, 0, s, 1), types.a_range(), stream);
          tools::fill_random(tb.ptr, n * k, dtype, input_seed(m, 0, s, 2), 1.0f, stream);
          const OpBenchScales theirs = scales_of(s);
          op_reference_rows(types, layout, n, k, ta.ptr, tb.ptr, nullptr, theirs.sa(), theirs.sb(),
                            static_cast<int32_t*>(d_global.ptr), count, static_cast<double*>(part_ref.ptr), stream);
          FLUX_CUDA_CHECK(cudaMemcpyAsync(piece.data(), part_ref.ptr, piece.size() * 8, cudaMemcpyDeviceToHost, stream));
          FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
          for (size_t i = 0; i < total.size(); ++i) total[i] += piece[i];
        }
        FLUX_CUDA_CHECK(cudaMemcpy(ref.ptr, total.data(), total.size() * 8, cudaMemcpyHostToDevice));
        tools::CompareResult cr = tools::compare_rows(types.out, n, out.ptr, static_cast<int32_t*>(d_local.ptr), count,
                                                      static_cast<double*>(ref.ptr), stream);
        err = max_over_ranks(comm, cr.nonfinite > 0 ? 1e30 : cr.max_row_rel, "gemm-rs err");
        if (!(*err < tools::tolerance(types.out))) ++failures;
      }
      const double flops = 2.0 * double(m) * double(n) * double(k);
      const double nccl_ms = bench.nccl ? med.back() : 0.0;
      std::optional<double> hidden;
      if (bench.nccl && nccl_ms > 0) hidden = (med[3] + nccl_ms - med[0]) / nccl_ms;
      if (json) {
        for (size_t i = 0; i < runs.size(); ++i) {
          tools::JsonLine line;
          line.add("op", "gemm_rs").add("impl", runs[i].name).add("dtype", to_string(dtype)).add("m", m).add("n", n)
              .add("k", shape.k).add("world_size", w).add("median_ms", med[i]);
          if (runs[i].name == "nccl_comm") {
            line.add_null("tflops");
          } else {
            line.add("tflops", flops / med[i] / 1e9);  // per rank
          }
          line.add("max_rel_err", runs[i].name == "flux" ? err : std::nullopt).add("k_per_rank", k).add("layout", to_string(layout));
          if (types.fp8()) line.add("out_dtype", to_string(types.out)).add("scale", to_string(types.scale));
          if (runs[i].name == "flux") {
            line.add("hidden", hidden).add("config", fused_layout.gemm.config.name).add("col_bands", fused_layout.col_bands)
                .add("reduce_sms", fused_layout.reduce_sms).add("rule", plan.layout(m).reason);
          }
          bench.add_run_fields(line, command_line);
          *json << line.str() << "\n";
        }
        json->flush();
      }
      if (r == 0) {
        char shape_text[64];
        std::snprintf(shape_text, sizeof(shape_text), "%ldx%ldx%ld", long(m), long(n), long(shape.k));
        std::printf("%-20s %-5s %9.3f %9.3f %9.3f %9.3f %9.3f %9s %8s %s%s\n", shape_text, to_string(dtype), med[0], med[1],
                    med[2], med[3], med[4], bench.nccl ? std::to_string(nccl_ms).substr(0, 7).c_str() : "-",
                    hidden ? std::to_string(*hidden).substr(0, 6).c_str() : "-", to_string(plan.layout(m).impl),
                    err && !(*err < tools::tolerance(types.out)) ? "  CHECK FAILED" : "");
        std::fflush(stdout);
      }
      comm.barrier("gemm-rs shape done");
      plan.release();
    }
  }
  bench.finish();
  if (failures > 0) {
    if (r == 0) std::printf("flux-bench gemm-rs: %d correctness checks FAILED\n", failures);
    return 3;
  }
  return 0;
}

}  // namespace flux::bench
