// tools/bench/bench_ag_gemm.cpp — `flux-bench ag-gemm`, run as W ranks (flux-run -n W -- flux-bench ag-gemm).
//
// Per shape (M, N, K: the full layer; each rank holds M/W rows of A and multiplies all M rows by its
// B_r [N/W, K]^T) and dtype, side by side in interleaved rounds on rotating input sets: flux (fused, SM
// gather), flux_ce (fused, copy-engine gather; one GPU per rank only), sequential, decomposed,
// cublas_gemm and gemm_core (the per-rank GEMM M x N/W x K alone) and nccl_comm (NCCL's all-gather
// alone; one GPU per rank only). hidden = (cublas_gemm + nccl_comm - fused) / nccl_comm where known.
// A row reports the slowest rank's median; the fused output is checked on sampled rows against fp64.
// Default suite: DESIGN.md's full-layer AG+GEMM shapes, M in {1024, 2048, 4096, 8192, 16384},
// N = 49152, K = 12288. FP8 rows (--dtypes e4m3): out in --out-dtype, scales per --scale (bench_operands.h);
// every implementation, cuBLASLt included, runs FP8 with the same scales; nccl_comm moves the FP8 bytes.
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

#include "flux/ag_gemm.h"
#include "flux/baseline/cublas_gemm.h"
#include "src/common/check.h"
#include "src/common/nccl_check.h"
#include "tools/bench/bench_ag_gemm.h"
#include "tools/bench/bench_args.h"
#include "tools/bench/bench_operands.h"
#include "tools/bench/bench_ranks.h"
#include "tools/common/device_tools.h"
#include "tools/common/json.h"
#include "tools/common/timing.h"

namespace flux::bench {

namespace {

using Buffer = flux::tools::DeviceBuffer;

uint64_t input_seed(uint64_t base, int set, int rank, int what) {
  return base * 2862933555777941757ull + uint64_t(set) * 1000003ull + uint64_t(rank) * 7919ull + uint64_t(what);
}

}  // namespace

int run_ag_gemm_bench(const std::vector<std::string>& argv, const std::string& command_line) {
  FusedBench bench(argv, {"ag-gemm", {1024, 2048, 4096, 8192, 16384}, 49152, 12288, 3, 20, true});
  bench.print_banner("; NCCL unavailable: no nccl_comm row, no hidden; no flux_ce");
  Communicator& comm = bench.comm;
  const int w = bench.w, r = bench.r;
  const WeightLayout layout = bench.layout;
  std::ofstream* json = bench.json.get();
  cudaStream_t stream = bench.stream;
  int failures = 0;
  for (DType dtype : bench.dtypes) {
    for (const Shape& shape : bench.shapes) {
      const int64_t m = shape.m, n = shape.n / w, k = shape.k, shard = m / w;
      FLUX_CHECK_ARG(shape.n % w == 0 && m % w == 0, "flux-bench ag-gemm: shape ", m, "x", shape.n, "x", k,
                     " (M and N must be multiples of W = ", w, ")");
      const OpBenchTypes types = op_bench_types(dtype, bench.args);
      const size_t es = dtype_size(dtype), out_es = dtype_size(types.out);
      const int64_t set_bytes = (shard * k + n * k) * int64_t(es);
      const int sets = tools::rotating_sets(set_bytes, bench.limits.l2_bytes, 8);
      std::vector<std::unique_ptr<Buffer>> a, b;
      for (int s = 0; s < sets; ++s) {
        a.push_back(std::make_unique<Buffer>(size_t(shard * k) * es));
        b.push_back(std::make_unique<Buffer>(size_t(n * k) * es));
        tools::fill_random(a[s]->ptr, shard * k, dtype, input_seed(m, s, r, 1), types.a_range(), stream);
        tools::fill_random(b[s]->ptr, n * k, dtype, input_seed(m, s, r, 2), 1.0f, stream);
      }
      Buffer out(size_t(m * n) * out_es), full(size_t(m * k) * es);
      // FP8: this rank's scales (per tensor, scale_a is the whole gathered A's: the same on every rank), and
      // scales over all M rows for the GEMM-alone rows.
      auto scales_of = [&](int rank) {
        return OpBenchScales(types, shard, n, input_seed(m, 0, types.vectors() ? rank : 0, 4), input_seed(m, 0, rank, 5), stream);
      };
      const OpBenchScales scales = scales_of(r);
      const OpBenchScales full_scales(types, m, n, input_seed(m, 0, 0, 6), input_seed(m, 0, r, 5), stream);
      AgGemmPlan plan(comm, AgGemmDesc{m, n, k, dtype, layout, types.out, types.scale});
      GemmPlan core(types.core(n, k, layout));
      CublasGemm cublas(types.core(n, k, layout), m, false);
      GemmArgs g0;
      g0.m = m;
      g0.a = full.ptr;
      g0.b = b[0]->ptr;
      g0.c = out.ptr;
      g0.scale_a = full_scales.sa();
      g0.scale_b = full_scales.sb();
      tools::fill_random(full.ptr, m * k, dtype, 1, types.a_range(), stream);
      cublas.tune(g0, stream, 3);
      auto ag_args = [&](int set) {
        AgGemmArgs x;
        x.a_shard = TensorRef(a[set]->ptr, shard, k, dtype);
        x.b = layout == WeightLayout::kNK ? TensorRef(b[set]->ptr, n, k, dtype) : TensorRef(b[set]->ptr, k, n, dtype);
        x.out = TensorRef(out.ptr, m, n, types.out);
        x.scale_a = scales.a_ref();
        x.scale_b = scales.b_ref();
        return x;
      };
      int call = 0;
      auto next_set = [&] { return (call++) % sets; };
      std::vector<tools::TimedRun> runs = {
          {"flux", [&](int) { plan.run(ag_args(next_set()), stream, AgGemmImpl::kFused); }},
          {"sequential", [&](int) { plan.run(ag_args(next_set()), stream, AgGemmImpl::kSequential); }},
          {"decomposed", [&](int) { plan.run(ag_args(next_set()), stream, AgGemmImpl::kDecomposed); }},
          {"cublas_gemm", [&](int) {
             GemmArgs g = g0;
             g.b = b[next_set()]->ptr;
             cublas.run(g, stream);
           }},
          {"gemm_core", [&](int) {
             GemmArgs g = g0;
             g.b = b[next_set()]->ptr;
             core.run(g, stream);
           }},
      };
      if (!comm.shares_gpu() && w > 1) {
        runs.push_back({"flux_ce", [&](int) { plan.run(ag_args(next_set()), stream, AgGemmImpl::kFusedCopyEngine); }});
      }
      if (bench.nccl) {
        runs.push_back({"nccl_comm", [&](int) {
                          FLUX_NCCL_CHECK(ncclAllGather(a[next_set()]->ptr, full.ptr, size_t(shard * k),
                                                        detail::nccl_data_type(dtype), comm.nccl(),
                                                        stream));
                        }});
      }
      comm.barrier("ag-gemm bench start");
      auto times = tools::time_interleaved(runs, stream, bench.warmup, bench.iters);
      plan.check_status();
      std::vector<double> med(runs.size());
      for (size_t i = 0; i < runs.size(); ++i) med[i] = max_over_ranks(comm, tools::median(times[i]), "ag-gemm median");

      std::optional<double> err;
      if (bench.check) {
        plan.run(ag_args(0), stream, AgGemmImpl::kFused);
        FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
        plan.check_status();
        // A = the concatenation of every rank's set-0 shard, regenerated from the seeds.
        for (int s = 0; s < w; ++s) {
          tools::fill_random(static_cast<char*>(full.ptr) + size_t(s * shard * k) * es, shard * k, dtype,
                             input_seed(m, 0, s, 1), types.a_range(), stream);
        }
        // FP8 per row: the gathered row scales, every rank's regenerated from its seed.
        Buffer full_sa(size_t(std::max<int64_t>(m, 1)) * sizeof(float));
        if (types.vectors()) {
          for (int s = 0; s < w; ++s) {
            const OpBenchScales theirs = scales_of(s);
            FLUX_CUDA_CHECK(cudaMemcpyAsync(full_sa.as<float>() + s * shard, theirs.sa(), size_t(shard) * sizeof(float),
                                            cudaMemcpyDeviceToDevice, stream));
            FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
          }
        }
        const int64_t count = std::min<int64_t>(m, bench.check_rows);
        std::vector<int32_t> rows;
        std::mt19937_64 rng(uint64_t(m) * 17 + uint64_t(r));
        for (int64_t i = 0; i < count; ++i) rows.push_back(static_cast<int32_t>(i == 0 ? 0 : (i == 1 ? m - 1 : int64_t(rng() % uint64_t(m)))));
        Buffer d_rows(rows.size() * 4), ref(size_t(count * n) * 8);
        FLUX_CUDA_CHECK(cudaMemcpy(d_rows.ptr, rows.data(), rows.size() * 4, cudaMemcpyHostToDevice));
        op_reference_rows(types, layout, n, k, full.ptr, b[0]->ptr, nullptr, types.vectors() ? full_sa.as<float>() : scales.sa(),
                          scales.sb(), static_cast<int32_t*>(d_rows.ptr), count, static_cast<double*>(ref.ptr), stream);
        tools::CompareResult cr = tools::compare_rows(types.out, n, out.ptr, static_cast<int32_t*>(d_rows.ptr), count,
                                                      static_cast<double*>(ref.ptr), stream);
        err = max_over_ranks(comm, cr.nonfinite > 0 ? 1e30 : cr.max_row_rel, "ag-gemm err");
        if (!(*err < tools::tolerance(types.out))) ++failures;
      }
      const double flops = 2.0 * double(m) * double(n) * double(k);
      const double nccl_ms = bench.nccl ? med.back() : 0.0;
      auto hidden_of = [&](double fused_ms) -> std::optional<double> {
        if (!bench.nccl || nccl_ms <= 0) return std::nullopt;
        return (med[3] + nccl_ms - fused_ms) / nccl_ms;
      };
      const AgGemmLayout L = plan.layout(m);
      if (json) {
        for (size_t i = 0; i < runs.size(); ++i) {
          tools::JsonLine line;
          line.add("op", "ag_gemm").add("impl", runs[i].name).add("dtype", to_string(dtype)).add("m", m).add("n", shape.n)
              .add("k", k).add("world_size", w).add("median_ms", med[i]);
          if (runs[i].name == "nccl_comm") {
            line.add_null("tflops");
          } else {
            line.add("tflops", flops / med[i] / 1e9);  // per rank
          }
          line.add("max_rel_err", runs[i].name == "flux" ? err : std::nullopt).add("n_per_rank", n).add("layout", to_string(layout));
          if (types.fp8()) line.add("out_dtype", to_string(types.out)).add("scale", to_string(types.scale));
          if (runs[i].name == "flux" || runs[i].name == "flux_ce") line.add("hidden", hidden_of(med[i]));
          if (runs[i].name == "flux") line.add("gemm_sms", L.gemm_sms).add("gather_sms", L.gather_sms).add("rule", L.reason);
          bench.add_run_fields(line, command_line);
          *json << line.str() << "\n";
        }
        json->flush();
      }
      if (r == 0) {
        std::printf("%ldx%ldx%ld %s:", long(m), long(shape.n), long(k), to_string(dtype));
        for (size_t i = 0; i < runs.size(); ++i) std::printf(" %s %.3f", runs[i].name.c_str(), med[i]);
        std::printf(" ms; path %s%s\n", to_string(L.impl), err && !(*err < tools::tolerance(types.out)) ? "  CHECK FAILED" : "");
        std::fflush(stdout);
      }
      comm.barrier("ag-gemm shape done");
      plan.release();
    }
  }
  bench.finish();
  if (failures > 0) {
    if (r == 0) std::printf("flux-bench ag-gemm: %d correctness checks FAILED\n", failures);
    return 3;
  }
  return 0;
}

}  // namespace flux::bench
