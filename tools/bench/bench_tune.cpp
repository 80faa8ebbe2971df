// tools/bench/bench_tune.cpp — `flux-bench tune`: measure every candidate of the GEMM core per shape and
// write the tuning cache (src/gemm/tune_cache.h) that FLUX_TUNE_CACHE points plans at.
//
// For each dtype, shape and SM budget (--max-sms: 0 = all SMs; fused ops run the core on fewer, e.g. 124
// beside an 8-SM helper): every compiled config x raster (row, col) x swizzle (1, 2, 4, 8), every split-K
// factor of the split-capable configs, plus the heuristic's own choice, are checked against an fp64 reference on sampled rows (outputs poisoned first;
// a candidate that fails is dropped) and timed side by side (interleaved rounds, each call on the next of
// several input sets larger than twice the L2, CUDA events, medians). The fastest goes into the cache
// under (dtype, layout, N, K, SMs, M bucket). Tune on the corpus's tune half (--corpus tune) only: the
// test half is for judging the result.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "flux/error.h"
#include "flux/gemm.h"
#include "src/common/check.h"
#include "src/gemm/tune_cache.h"
#include "tools/bench/bench_args.h"
#include "tools/bench/bench_tune.h"
#include "tools/bench/sweep_variants.h"
#include "tools/common/device_tools.h"
#include "tools/common/timing.h"

namespace flux::bench {

int run_tune_bench(const std::vector<std::string>& argv, const std::string& command_line) {
  (void)command_line;
  Args args(argv,
            {"--dtypes", "--layout", "--shapes", "--corpus", "--corpus-file", "--corpus-every", "--corpus-max-m", "--corpus-min-m", "--max-sms", "--iters",
             "--warmup", "--out"},
            {"--merge"});
  const std::string out = args.get("--out", "");
  FLUX_CHECK_ARG(!out.empty(), "flux-bench tune: --out FILE is required (the cache to write)");
  const DeviceLimits limits = query_device_limits(-1);  // throws Unsupported without a GPU
  std::vector<DType> dtypes;
  for (const std::string& d : args.get_list("--dtypes", "bf16,fp16")) dtypes.push_back(parse_dtype(d));
  const WeightLayout layout = parse_weight_layout(args.get("--layout", "nk"));
  const std::vector<Shape> shapes = select_shapes(args, {});
  FLUX_CHECK_ARG(!shapes.empty(), "flux-bench tune: give --shapes MxNxK,... or --corpus tune");
  std::vector<int> budgets;
  for (const std::string& s : args.get_list("--max-sms", "0")) {
    const int v = std::stoi(s);
    FLUX_CHECK_ARG(v >= 0 && v <= limits.sm_count, "flux-bench tune: --max-sms ", v, " (expected 0..", limits.sm_count, ")");
    budgets.push_back(v);
  }
  const int iters = static_cast<int>(args.get_int("--iters", 10));
  const int warmup = static_cast<int>(args.get_int("--warmup", 2));
  FLUX_CHECK_ARG(iters >= 5, "flux-bench tune: --iters ", iters, " (expected >= 5)");

  gemm::TuneCache cache;
  if (args.flag("--merge")) {
    std::string warning;
    cache = gemm::TuneCache::load(out, limits.name, limits.sm_count, &warning);
    if (!warning.empty()) std::fprintf(stderr, "%s (starting a new cache)\n", warning.c_str());
  }
  cudaStream_t stream = nullptr;
  FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::mt19937_64 rng(777);
  std::printf("flux-bench tune on %s (%d SMs): %zu shapes x %zu dtypes x %zu SM budgets -> %s\n", limits.name.c_str(),
              limits.sm_count, shapes.size(), dtypes.size(), budgets.size(), out.c_str());
  int improved = 0, tuned = 0;
  for (DType dtype : dtypes) {
    for (const Shape& shape : shapes) {
      const int64_t m = shape.m, n = shape.n, k = shape.k;
      const size_t es = dtype_size(dtype);
      const GemmDesc desc{n, k, dtype, layout};
      const int64_t set_bytes = (m * k + n * k) * int64_t(es);
      const int sets = tools::rotating_sets(set_bytes, limits.l2_bytes, 16);
      std::vector<std::unique_ptr<tools::DeviceBuffer>> a, b;
      for (int s = 0; s < sets; ++s) {
        a.push_back(std::make_unique<tools::DeviceBuffer>(size_t(m * k) * es));
        b.push_back(std::make_unique<tools::DeviceBuffer>(size_t(n * k) * es));
        tools::fill_random(a[s]->ptr, m * k, dtype, rng(), 1.0f, stream);
        tools::fill_random(b[s]->ptr, n * k, dtype, rng(), 1.0f, stream);
      }
      tools::DeviceBuffer c(size_t(m * n) * es);
      std::vector<int32_t> rows = {0, static_cast<int32_t>(m - 1)};
      for (int i = 0; i < 14 && int64_t(rows.size()) < m; ++i) rows.push_back(static_cast<int32_t>(rng() % uint64_t(m)));
      tools::DeviceBuffer d_rows(rows.size() * sizeof(int32_t)), d_ref(rows.size() * size_t(n) * sizeof(double));
      FLUX_CUDA_CHECK(cudaMemcpy(d_rows.ptr, rows.data(), rows.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
      tools::reference_gemm_rows(dtype, layout, n, k, a[0]->ptr, b[0]->ptr, nullptr, d_rows.as<int32_t>(),
                                 int64_t(rows.size()), d_ref.as<double>(), stream);
      for (int budget : budgets) {
        struct Candidate {
          std::unique_ptr<GemmPlan> plan;
          gemm::TuneChoice choice;
          bool heuristic = false;
        };
        std::vector<Candidate> candidates;
        auto add = [&](const GemmOptions& o, bool heuristic) {
          Candidate cand;
          cand.plan = std::make_unique<GemmPlan>(desc, o);
          const GemmSelection sel = cand.plan->select(m);
          if (o.stream_k == StreamKMode::kOn && !sel.stream_k) return;  // whole waves: the whole-tile variants cover it
          cand.choice.config = sel.config.name;
          cand.choice.raster = o.order.raster == Raster::kAuto ? sel.raster : o.order.raster;
          cand.choice.swizzle = o.order.swizzle == 0 ? sel.swizzle : o.order.swizzle;
          cand.choice.splits = sel.splits;
          cand.choice.stream_k = sel.stream_k;
          cand.heuristic = heuristic;
          // Correctness first: a candidate that computes the wrong product is never a choice.
          GemmArgs g;
          g.m = m;
          g.a = a[0]->ptr;
          g.b = b[0]->ptr;
          g.c = c.ptr;
          tools::poison(c.ptr, m * n, stream);
          cand.plan->run(g, stream);
          tools::CompareResult cr = tools::compare_rows(dtype, n, c.ptr, d_rows.as<int32_t>(), int64_t(rows.size()),
                                                        d_ref.as<double>(), stream);
          if (cr.nonfinite != 0 || cr.max_row_rel >= tools::tolerance(dtype)) {
            std::printf("FAIL %s %ldx%ldx%ld %s: %s (dropped)\n", cand.choice.config.c_str(), long(m), long(n), long(k),
                        to_string(dtype), tools::describe(cr).c_str());
            return;
          }
          candidates.push_back(std::move(cand));
        };
        GemmOptions base;
        base.max_sms = budget;
        base.tune_cache = "none";
        add(base, true);
        const int sms = budget > 0 ? budget : limits.sm_count;
        for (const GemmOptions& o : sweep_variants(dtype, layout, m, n, k, sms, base)) add(o, false);
        FLUX_CHECK(!candidates.empty(), "no candidate computed the right product for ", m, "x", n, "x", k);
        int call = 0;
        std::vector<tools::TimedRun> runs;
        for (Candidate& cand : candidates) {
          GemmPlan* p = cand.plan.get();
          runs.push_back({cand.choice.config, [&, p](int) {
                            const int s = (call++) % sets;
                            GemmArgs g;
                            g.m = m;
                            g.a = a[s]->ptr;
                            g.b = b[s]->ptr;
                            g.c = c.ptr;
                            p->run(g, stream);
                          }});
        }
        auto times = tools::time_interleaved(runs, stream, warmup, iters);
        size_t best = 0;
        double heuristic_ms = 0;
        for (size_t i = 0; i < candidates.size(); ++i) {
          candidates[i].choice.ms = tools::median(times[i]);
          if (candidates[i].heuristic) heuristic_ms = candidates[i].choice.ms;
          if (candidates[i].choice.ms < candidates[best].choice.ms) best = i;
        }
        for (Candidate& cand : candidates) cand.plan->check_status();
        cache.put(gemm::TuneKey{dtype, layout, n, k, sms, gemm::TuneCache::m_bucket(m)}, candidates[best].choice);
        ++tuned;
        improved += candidates[best].choice.ms < heuristic_ms * 0.99;
        std::printf("%ldx%ldx%ld %s sms %d: %s raster %s swizzle %d splits %d%s %.4f ms (heuristic %.4f ms, %.3fx)\n",
                    long(m), long(n), long(k), to_string(dtype), sms, candidates[best].choice.config.c_str(),
                    candidates[best].choice.raster == Raster::kColMajor ? "col" : "row", candidates[best].choice.swizzle,
                    candidates[best].choice.splits, candidates[best].choice.stream_k ? " stream-K" : "",
                    candidates[best].choice.ms, heuristic_ms,
                    heuristic_ms / candidates[best].choice.ms);
        std::fflush(stdout);
      }
    }
  }
  FLUX_CUDA_CHECK(cudaStreamDestroy(stream));
  cache.save(out, limits.name, limits.sm_count);
  std::printf("flux-bench tune: %d entries tuned (%d more than 1%% faster than the heuristic), %zu in %s\n", tuned,
              improved, cache.size(), out.c_str());
  return 0;
}

}  // namespace flux::bench
