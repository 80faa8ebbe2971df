// tools/bench/bench_gemm.cpp — `flux-bench gemm`: the GEMM core against cuBLAS, side by side.
//
// For each shape and dtype, in one process on the same inputs: flux (heuristic config, no hooks),
// flux_hooks (wait-before-load with every M-block's flag pre-released, and every tile published) and
// cublas (fastest of cublasGemmEx and cuBLASLt's top 8 heuristics, tuned on these inputs).
// --attribution adds flux_wait and flux_publish (each hook alone), flux_order (the tile order split
// in tp segments from segment 1, as a fused op uses it) and flux_hooks_segmented (all three). Warm-up, then interleaved rounds (flux, flux_hooks, cublas,
// flux, ...) timed with CUDA events, each round on the next of several input sets whose total size
// is more than twice the L2; the median over rounds is reported. The rounds run twice: with a GPU delay
// queued first so the host is ahead (median_ms, vs_cublas: GPU time, the kernels' speed) and back to back
// (queued_ms, vs_cublas_queued: for a kernel shorter than its host enqueue this is the host's rate, what
// an eager caller without CUDA graphs gets); host_us is each call's host time. Before timing, each
// implementation's output (poisoned first) is checked on sampled rows against an fp64 reference.
// --sweep adds every config x raster x swizzle, and every split-K factor of the split-capable configs
// (impl "flux_sweep", with "splits"), to fit the heuristic.
// --corpus tune|test|all runs the rows of that half of the shape corpus (bench/corpus/gemm_corpus.csv,
// --corpus-file; --corpus-every N keeps every N-th row) instead of the suite, and summarises per half and
// per M regime.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "flux/baseline/cublas_gemm.h"
#include "flux/error.h"
#include "flux/gemm.h"
#include "src/common/check.h"
#include "tools/bench/bench_args.h"
#include "tools/bench/bench_gemm.h"
#include "tools/bench/sweep_variants.h"
#include "tools/common/device_tools.h"
#include "tools/common/json.h"
#include "tools/common/timing.h"

namespace flux::bench {

namespace {

using tools::DeviceBuffer;

const char* raster_name(Raster r) { return r == Raster::kColMajor ? "col" : "row"; }

struct Measured {
  std::string impl;
  std::string config;  // flux rows
  std::string raster;
  int swizzle = 0;
  int splits = 1;
  bool stream_k = false;
  std::string algo;  // cublas row
  double median_ms = 0, p10_ms = 0, p90_ms = 0;  // GPU time, host ahead of the GPU
  double queued_ms = 0;  // the same calls back to back with no lead: what a host-bound caller sees
  double host_us = 0;    // host enqueue time per call
  double max_rel_err = NAN;
  bool checked = false;
  bool ok = true;
};

}  // namespace

int run_gemm_bench(const std::vector<std::string>& argv, const std::string& command_line) {
  Args args(argv,
            {"--dtypes", "--layout", "--shapes", "--warmup", "--iters", "--json", "--sweep-iters", "--check-rows",
             "--corpus", "--corpus-file", "--corpus-every", "--corpus-max-m", "--corpus-min-m", "--scale", "--out-dtype"},
            {"--sweep", "--no-check", "--bias", "--list-configs", "--attribution"});
  if (args.flag("--list-configs")) {
    for (const GemmConfigInfo& c : gemm_configs()) std::printf("%s\n", c.name);
    return 0;
  }
  const DeviceLimits limits = query_device_limits(-1);  // throws Unsupported without a GPU
  std::vector<DType> dtypes;
  for (const std::string& d : args.get_list("--dtypes", "bf16,fp16")) dtypes.push_back(parse_dtype(d));
  const WeightLayout layout = parse_weight_layout(args.get("--layout", "nk"));
  // FP8 rows (--dtypes e4m3): C in --out-dtype, scaled per tensor or per row / column (--scale).
  const ScaleKind fp8_scale = parse_scale_kind(args.get("--scale", "per-tensor"));
  const DType fp8_out = parse_dtype(args.get("--out-dtype", "bf16"));
  FLUX_CHECK_ARG(fp8_scale != ScaleKind::kNone, "flux-bench gemm: --scale none (FP8 rows need per-tensor or per-row-col)");
  const std::vector<Shape> shapes = select_shapes(args, gemm_suite_shapes());
  const int warmup = static_cast<int>(args.get_int("--warmup", 5));
  const int iters = static_cast<int>(args.get_int("--iters", 30));
  const int sweep_iters = static_cast<int>(args.get_int("--sweep-iters", 20));
  const int check_rows = static_cast<int>(args.get_int("--check-rows", 64));
  const bool check = !args.flag("--no-check");
  const bool with_bias = args.flag("--bias");
  const bool sweep = args.flag("--sweep");
  const bool attribution = args.flag("--attribution");
  FLUX_CHECK_ARG(iters >= 20, "flux-bench gemm: --iters ", iters, " (the project reports medians of >= 20)");

  std::unique_ptr<std::ofstream> json;
  const std::string json_path = args.get("--json", "");
  if (!json_path.empty()) {
    json = std::make_unique<std::ofstream>(json_path, std::ios::out | std::ios::trunc);
    FLUX_CHECK_ARG(json->good(), "flux-bench gemm: cannot write --json ", json_path);
  }
  const std::string date = tools::utc_now_iso8601();

  cudaStream_t stream = nullptr;
  FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  std::printf("flux-bench gemm on %s (%d SMs, L2 %.0f MB, HBM %.2f TB/s peak), layout %s, bias %s, %d warm-up + %d "
              "timed rounds\n",
              limits.name.c_str(), limits.sm_count, limits.l2_bytes / 1e6, limits.hbm_bytes_per_s / 1e12,
              to_string(layout), with_bias ? "yes" : "no", warmup, iters);
  std::printf("%-22s %-5s %-26s %9s %8s %9s %8s %9s %8s %7s %7s\n", "shape (MxNxK)", "dtype", "flux config", "flux ms",
              "TFLOP/s", "hooks ms", "TFLOP/s", "cublas ms", "TFLOP/s", "flux/cb", "hook/cb");

  std::vector<double> flux_ratios, hooks_ratios, queued_ratios;
  std::map<std::string, std::vector<double>> regime_ratios;  // corpus: "<half> <M regime>" -> flux / cuBLAS
  std::map<std::string, std::vector<double>> attribution_ratios;  // time / flux time
  bool all_ok = true;
  int skipped_rows = 0;
  std::mt19937_64 rng(12345);

  for (DType dtype : dtypes) {
    for (const Shape& shape : shapes) {
      const int64_t m = shape.m, n = shape.n, k = shape.k;
      const bool fp8 = dtype == DType::kE4M3;
      const GemmDesc desc{n, k, dtype, layout, fp8_out, fp8 ? fp8_scale : ScaleKind::kNone};
      const DType out_dtype = gemm_out_dtype(desc);
      const size_t es = dtype_size(dtype), out_es = dtype_size(out_dtype);
      const bool scale_vectors = fp8 && fp8_scale == ScaleKind::kPerRowCol;
      if (fp8 && k % 16 != 0) {  // e4m3 rows of A and B must be 16 bytes (corpus rows with K % 16 = 8)
        std::printf("%ldx%ldx%ld e4m3: skipped (K not a multiple of 16, which FP8 TMA loads need)\n", long(m), long(n),
                    long(k));
        ++skipped_rows;
        continue;
      }
      const double flops = 2.0 * double(m) * double(n) * double(k);
      const int64_t set_bytes = (m * k + n * k) * int64_t(es);
      const int sets = tools::rotating_sets(set_bytes, limits.l2_bytes, 16);

      std::vector<std::unique_ptr<DeviceBuffer>> a, b, c;
      for (int s = 0; s < sets; ++s) {
        a.push_back(std::make_unique<DeviceBuffer>(size_t(m * k) * es));
        b.push_back(std::make_unique<DeviceBuffer>(size_t(n * k) * es));
        c.push_back(std::make_unique<DeviceBuffer>(size_t(m * n) * out_es));
        tools::fill_random(a[s]->ptr, m * k, dtype, rng(), fp8 ? 4.0f : 1.0f, stream);
        tools::fill_random(b[s]->ptr, n * k, dtype, rng(), 1.0f, stream);
      }
      std::unique_ptr<DeviceBuffer> bias;
      if (with_bias) {
        bias = std::make_unique<DeviceBuffer>(size_t(n) * out_es);
        tools::fill_random(bias->ptr, n, out_dtype, rng(), 1.0f, stream);
      }
      // FP8 scales (not 1): [M] and [N] per row / column, else one each.
      DeviceBuffer scale_a(size_t(scale_vectors ? m : 1) * sizeof(float)), scale_b(size_t(scale_vectors ? n : 1) * sizeof(float));
      if (fp8) {
        tools::fill_scales(scale_a.as<float>(), scale_vectors ? m : 1, rng(), 0.5f, 2.0f, stream);
        tools::fill_scales(scale_b.as<float>(), scale_vectors ? n : 1, rng(), 0.01f, 0.03f, stream);
      }

      // The hooked rows run on the same plan (every config runs the extension points, swap-AB included, as in a
      // fused op's GEMM), so they time the hooks on the very selection of the unhooked rows.
      GemmPlan plan(desc);
      GemmOptions segmented_options;
      segmented_options.order.segments = shape.tp > 1 ? shape.tp : 4;  // a fused op's W (4 off the suite, or at TP 1)
      segmented_options.order.first_segment = 1;
      GemmPlan segmented_plan(desc, segmented_options);
      const GemmSelection sel = plan.select(m);
      DeviceBuffer wait_flags(size_t(sel.tiles_m) * sizeof(uint32_t));
      FLUX_CUDA_CHECK(cudaMemsetAsync(wait_flags.ptr, 0x01, size_t(sel.tiles_m) * sizeof(uint32_t), stream));  // released
      DeviceBuffer publish_flags(size_t(sel.tiles_m * sel.tiles_n) * sizeof(uint32_t));
      FLUX_CUDA_CHECK(cudaMemsetAsync(publish_flags.ptr, 0, size_t(sel.tiles_m * sel.tiles_n) * sizeof(uint32_t),
                                      stream));

      auto gemm_args = [&](int set) {
        GemmArgs g;
        g.m = m;
        g.a = a[set]->ptr;
        g.b = b[set]->ptr;
        g.bias = bias ? bias->ptr : nullptr;
        g.c = c[set]->ptr;
        if (fp8) {
          g.scale_a = scale_a.as<float>();
          g.scale_b = scale_b.as<float>();
        }
        return g;
      };
      auto hook_args = [&](int set, int iteration) {
        GemmArgs g = gemm_args(set);
        g.wait.flags = static_cast<const uint32_t*>(wait_flags.ptr);
        g.wait.value = 1;
        g.publish.mode = PublishMode::kTileFlag;
        g.publish.flags = static_cast<uint32_t*>(publish_flags.ptr);
        g.publish.value = static_cast<uint32_t>(iteration + 1);
        return g;
      };

      // cuBLASLt FP8 with the same scales; where it has no per-row / per-column (outer-vector) kernel, the
      // per-tensor one on the same shapes (the same bytes and math, scalar scales; its output is then not
      // checked against this reference), said in the row's cublas_scale.
      std::unique_ptr<CublasGemm> cublas_plan;
      std::string cublas_scale = fp8 ? to_string(fp8_scale) : "none";
      try {
        cublas_plan = std::make_unique<CublasGemm>(desc, m, with_bias);
      } catch (const Unsupported& e) {
        if (!scale_vectors) throw;
        GemmDesc scalar = desc;
        scalar.scale = ScaleKind::kPerTensor;
        cublas_plan = std::make_unique<CublasGemm>(scalar, m, with_bias);
        cublas_scale = "per-tensor (no outer-vector kernel)";
      }
      CublasGemm& cublas = *cublas_plan;
      const bool cublas_checkable = cublas_scale == (fp8 ? to_string(fp8_scale) : "none");
      cublas.tune(gemm_args(0), stream, 5);

      // Correctness on sampled rows (always rows 0 and m-1).
      std::vector<int32_t> rows;
      std::unique_ptr<DeviceBuffer> d_rows, d_ref;
      if (check) {
        int64_t count = std::min<int64_t>(m, check_rows);
        rows.push_back(0);
        if (m > 1) rows.push_back(static_cast<int32_t>(m - 1));
        std::uniform_int_distribution<int64_t> pick(0, m - 1);
        while (static_cast<int64_t>(rows.size()) < count) rows.push_back(static_cast<int32_t>(pick(rng)));
        d_rows = std::make_unique<DeviceBuffer>(rows.size() * sizeof(int32_t));
        FLUX_CUDA_CHECK(cudaMemcpy(d_rows->ptr, rows.data(), rows.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
        d_ref = std::make_unique<DeviceBuffer>(rows.size() * size_t(n) * sizeof(double));
        if (fp8) {
          tools::reference_fp8_gemm_rows(out_dtype, n, k, a[0]->ptr, b[0]->ptr, bias ? bias->ptr : nullptr,
                                         scale_a.as<float>(), scale_b.as<float>(), scale_vectors,
                                         static_cast<int32_t*>(d_rows->ptr), int64_t(rows.size()),
                                         static_cast<double*>(d_ref->ptr), stream);
        } else {
          tools::reference_gemm_rows(dtype, layout, n, k, a[0]->ptr, b[0]->ptr, bias ? bias->ptr : nullptr,
                                     static_cast<int32_t*>(d_rows->ptr), int64_t(rows.size()),
                                     static_cast<double*>(d_ref->ptr), stream);
        }
      }
      auto verify = [&](Measured& r, const std::function<void()>& run_once) {
        if (!check) return;
        tools::poison(c[0]->ptr, m * n, stream);
        run_once();
        tools::CompareResult cr = tools::compare_rows(out_dtype, n, c[0]->ptr, static_cast<int32_t*>(d_rows->ptr),
                                                      int64_t(rows.size()), static_cast<double*>(d_ref->ptr), stream);
        r.checked = true;
        r.max_rel_err = cr.max_row_rel;
        r.ok = cr.nonfinite == 0 && cr.max_row_rel < tools::tolerance(out_dtype);
        if (!r.ok) {
          std::printf("FAIL %s %ldx%ldx%ld %s: %s\n", r.impl.c_str(), long(m), long(n), long(k), to_string(dtype),
                      tools::describe(cr).c_str());
        }
      };

      std::vector<Measured> results(3);
      results[0].impl = "flux";
      results[0].config = sel.config.name;
      results[0].raster = raster_name(sel.raster);
      results[0].swizzle = sel.swizzle;
      results[0].splits = sel.splits;
      results[0].stream_k = sel.stream_k;
      results[1].impl = "flux_hooks";
      results[1].config = sel.config.name;
      results[1].raster = raster_name(sel.raster);
      results[1].swizzle = sel.swizzle;
      results[1].splits = sel.splits;
      results[1].stream_k = sel.stream_k;
      results[2].impl = "cublas";
      results[2].algo = cublas.candidate_name(cublas.chosen());
      verify(results[0], [&] { plan.run(gemm_args(0), stream); });
      verify(results[1], [&] { plan.run(hook_args(0, 1000000), stream); });
      if (cublas_checkable) verify(results[2], [&] { cublas.run(gemm_args(0), stream); });

      // Every call takes the next input set, whichever implementation makes it, so no call finds the
      // inputs of the call before it in L2 (sets x set size > 2 x L2).
      int call = 0;
      auto next_set = [&] { return (call++) % sets; };
      std::vector<tools::TimedRun> runs = {
          {"flux", [&](int) { plan.run(gemm_args(next_set()), stream); }},
          {"flux_hooks", [&](int it) { plan.run(hook_args(next_set(), it), stream); }},
          {"cublas", [&](int) { cublas.run(gemm_args(next_set()), stream); }},
      };
      // --attribution: each hook alone, in the same rounds.
      if (attribution) {
        const char* names[] = {"flux_order", "flux_wait", "flux_publish", "flux_hooks_segmented"};
        for (const char* name : names) {
          Measured r;
          r.impl = name;
          r.config = sel.config.name;
          r.raster = raster_name(sel.raster);
          r.swizzle = sel.swizzle;
          results.push_back(r);
        }
        runs.push_back({"flux_order", [&](int) { segmented_plan.run(gemm_args(next_set()), stream); }});
        runs.push_back({"flux_wait", [&](int) {
                          GemmArgs g = gemm_args(next_set());
                          g.wait = hook_args(0, 0).wait;
                          plan.run(g, stream);
                        }});
        runs.push_back({"flux_publish", [&](int it) {
                          GemmArgs g = gemm_args(next_set());
                          g.publish = hook_args(0, it).publish;
                          plan.run(g, stream);
                        }});
        runs.push_back({"flux_hooks_segmented",
                        [&](int it) { segmented_plan.run(hook_args(next_set(), it), stream); }});
        verify(results.back(), [&] { segmented_plan.run(hook_args(0, 2000000), stream); });
      }
      // Two timings of the same rounds: with the host ahead (GPU time of each call: the kernels' speed) and
      // back to back (a host slower than a short kernel shows in the event pairs: the call's cost to a
      // caller that does not use CUDA graphs). The bar is on the first; both are recorded.
      std::vector<double> host_us;
      auto times = tools::time_interleaved_host_ahead(runs, stream, warmup, iters, &host_us);
      auto queued = tools::time_interleaved(runs, stream, 1, iters);
      plan.check_status();
      segmented_plan.check_status();
      for (size_t i = 0; i < results.size(); ++i) {
        results[i].median_ms = tools::median(times[i]);
        results[i].p10_ms = tools::percentile(times[i], 10);
        results[i].p90_ms = tools::percentile(times[i], 90);
        results[i].queued_ms = tools::median(queued[i]);
        results[i].host_us = host_us[i];
      }

      // The sweep: every config x raster x swizzle, timed side by side with the tuned cuBLAS.
      if (sweep) {
        std::vector<std::unique_ptr<GemmPlan>> plans;
        std::vector<Measured> sweep_results;
        std::vector<tools::TimedRun> sweep_runs;
        auto add_variant = [&](const GemmOptions& o) {
          auto variant = std::make_unique<GemmPlan>(desc, o);
          const GemmSelection vs = variant->select(m);
          if (o.stream_k == StreamKMode::kOn && !vs.stream_k) return;  // whole waves: the whole-tile variants cover it
          GemmPlan* p = variant.get();
          plans.push_back(std::move(variant));
          Measured r;
          r.impl = "flux_sweep";
          r.config = o.config;
          r.raster = raster_name(o.order.raster != Raster::kAuto ? o.order.raster : vs.raster);
          r.swizzle = o.order.swizzle != 0 ? o.order.swizzle : vs.swizzle;
          r.splits = vs.splits;
          r.stream_k = vs.stream_k;
          verify(r, [&] { p->run(gemm_args(0), stream); });
          sweep_results.push_back(r);
          sweep_runs.push_back({o.config, [&, p](int) { p->run(gemm_args(next_set()), stream); }});
        };
        for (const GemmOptions& o : sweep_variants(dtype, layout, m, n, k, limits.sm_count)) add_variant(o);
        sweep_runs.push_back({"cublas", [&](int) { cublas.run(gemm_args(next_set()), stream); }});
        auto sweep_times = tools::time_interleaved_host_ahead(sweep_runs, stream, 2, sweep_iters, nullptr);
        double cublas_ms = tools::median(sweep_times.back());
        for (size_t i = 0; i < sweep_results.size(); ++i) {
          Measured& r = sweep_results[i];
          r.median_ms = tools::median(sweep_times[i]);
          r.p10_ms = tools::percentile(sweep_times[i], 10);
          r.p90_ms = tools::percentile(sweep_times[i], 90);
          all_ok = all_ok && r.ok;
          if (json) {
            tools::JsonLine line;
            line.add("op", "gemm").add("impl", r.impl).add("dtype", to_string(dtype)).add("m", m).add("n", n)
                .add("k", k).add("world_size", 1).add("median_ms", r.median_ms).add("tflops", flops / r.median_ms / 1e9)
                .add("max_rel_err", r.checked ? std::optional<double>(r.max_rel_err) : std::nullopt)
                .add("layout", to_string(layout)).add("config", r.config).add("raster", r.raster)
                .add("out_dtype", to_string(out_dtype))
                .add("swizzle", r.swizzle).add("splits", r.splits).add("stream_k", r.stream_k).add("cublas_ms", cublas_ms)
                .add("vs_cublas", cublas_ms / r.median_ms).add("iters", sweep_iters).add("gpu", limits.name).add("date", date).add("command", command_line);
            *json << line.str() << "\n";
          }
        }
      }

      const double cublas_ms = results[2].median_ms;
      for (Measured& r : results) {
        all_ok = all_ok && r.ok;
        if (json) {
          tools::JsonLine line;
          line.add("op", "gemm").add("impl", r.impl).add("dtype", to_string(dtype)).add("m", m).add("n", n).add("k", k)
              .add("world_size", 1).add("median_ms", r.median_ms).add("tflops", flops / r.median_ms / 1e9)
              .add("max_rel_err", r.checked ? std::optional<double>(r.max_rel_err) : std::nullopt)
              .add("p10_ms", r.p10_ms).add("p90_ms", r.p90_ms).add("queued_ms", r.queued_ms).add("host_us", r.host_us)
              .add("layout", to_string(layout)).add("bias", with_bias);
          if (fp8) line.add("out_dtype", to_string(out_dtype)).add("scale", to_string(fp8_scale));
          if (r.impl == "cublas") {
            line.add("algo", r.algo);
            if (fp8) line.add("cublas_scale", cublas_scale);
          } else {
            line.add("config", r.config).add("raster", r.raster).add("swizzle", r.swizzle).add("splits", r.splits)
                .add("stream_k", r.stream_k).add("vs_cublas", cublas_ms / r.median_ms)
                .add("vs_cublas_queued", results[2].queued_ms / r.queued_ms);
            if (r.impl == "flux") line.add("reason", sel.reason);
          }
          if (r.impl == "flux_order" || r.impl == "flux_hooks_segmented") {
            line.add("segments", segmented_options.order.segments).add("first_segment", 1);
          }
          line.add("tp", shape.tp);
          if (!shape.half.empty()) line.add("corpus", shape.half).add("name", shape.name);
          line.add("iters", iters).add("gpu", limits.name).add("date", date).add("command", command_line);
          *json << line.str() << "\n";
        }
      }
      json && json->flush();
      for (size_t i = 3; i < results.size(); ++i) {
        attribution_ratios[results[i].impl].push_back(results[i].median_ms / results[0].median_ms);
      }
      double rf = cublas_ms / results[0].median_ms, rh = cublas_ms / results[1].median_ms;
      flux_ratios.push_back(rf);
      hooks_ratios.push_back(rh);
      queued_ratios.push_back(results[2].queued_ms / results[0].queued_ms);
      if (!shape.half.empty()) {
        const char* regime = m < 128 ? "M < 128" : (m < 1024 ? "128 <= M < 1024" : "M >= 1024");
        regime_ratios[shape.half + " " + regime].push_back(rf);
        regime_ratios[shape.half + " all"].push_back(rf);
      }
      char shape_text[64];
      std::snprintf(shape_text, sizeof(shape_text), "%ldx%ldx%ld", long(m), long(n), long(k));
      std::printf("%-22s %-5s %-26s %9.3f %8.1f %9.3f %8.1f %9.3f %8.1f %7.3f %7.3f%s\n", shape_text, to_string(dtype),
                  sel.config.name, results[0].median_ms, flops / results[0].median_ms / 1e9, results[1].median_ms,
                  flops / results[1].median_ms / 1e9, cublas_ms, flops / cublas_ms / 1e9, rf, rh,
                  (results[0].ok && results[1].ok && results[2].ok) ? "" : "  CHECK FAILED");
      if (shape.m == shapes.front().m && &shape == &shapes.front()) std::printf("  (%s)\n", sel.reason.c_str());
      std::fflush(stdout);
    }
  }
  FLUX_CUDA_CHECK(cudaStreamDestroy(stream));

  auto summary = [](std::vector<double> v, const char* what) {
    if (v.empty()) return;
    std::sort(v.begin(), v.end());
    double med = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    std::printf("%s throughput / cublas over %zu rows: median %.3f, min %.3f, max %.3f\n", what, v.size(), med,
                v.front(), v.back());
  };
  if (skipped_rows > 0) std::printf("%d rows skipped (e4m3 with K %% 16 != 0)\n", skipped_rows);
  summary(flux_ratios, "flux      ");
  summary(hooks_ratios, "flux_hooks");
  summary(queued_ratios, "flux (queued back to back, host-bound where the host is slower)");
  for (auto& [what, v] : regime_ratios) summary(v, ("flux (" + what + ")").c_str());
  for (auto& [impl, v] : attribution_ratios) {
    std::sort(v.begin(), v.end());
    std::printf("%-22s time / flux time over %zu rows: median %.4f, min %.4f, max %.4f\n", impl.c_str(), v.size(),
                v[v.size() / 2], v.front(), v.back());
  }
  if (!all_ok) {
    std::printf("flux-bench gemm: some correctness checks FAILED (see FAIL lines above)\n");
    return 3;
  }
  return 0;
}

}  // namespace flux::bench
