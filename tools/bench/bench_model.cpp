// tools/bench/bench_model.cpp — `flux-bench model`: the overlap model (src/ops/common/overlap_model.h)
// fed with rates measured on this GPU, per shape and TP.
//
// Measured here, per dtype and per-rank shape (one GPU, side by side in interleaved rounds, inputs
// rotated past 2 x L2, CUDA events, medians):
//   - the GEMM core on all SMs and on SMs - k (k = --side-sms, the SMs the fused ops give their pull
//     kernel: FLUX_GEMM_RS_REDUCE_SMS / FLUX_AG_GEMM_GATHER_SMS, 8 by default), and one decomposed chunk's
//     GEMM (N / 4 columns; AG+GEMM: one shard's M / W rows) on the SMs NCCL leaves beside it (SMs -
//     ops::kRuleCollectiveSms);
//   - the pull kernel's own rate on k SMs: AG+GEMM's gather kernel copying one peer shard that lives in
//     this GPU's memory (a two-rank gather on one process, the flags already raised), so the rate is the
//     kernel's, not the link's; its bytes in flight are the kernel's constant (src/device/block_gather.h).
// Given (defaults in LinkSpec, cited there; flags to override): the link's bandwidth and latency, the
// unfused collective's bus bandwidth (default 80% of the link) and the fused path's fixed cost per call.
// Output: per shape, TP and dtype, each path's predicted time, the best path, the predicted hidden
// fraction, and the bytes the pull kernel would need in flight to reach the link's rate (Little's law).
// Shapes: the 18 per-rank suite shapes (each at its own TP and op; GEMM+AR on GEMM+RS's shapes, its
// one-shot as "fused" and its two-shot beside), or --shapes (per-rank MxNxK) for the three ops at every
// --tp (default 2,4,8).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "flux/error.h"
#include "flux/gemm.h"
#include "src/common/check.h"
#include "src/device/block_gather.h"
#include "src/ops/common/fused_rule.h"
#include "src/ops/common/overlap_model.h"
#include "tools/bench/bench_args.h"
#include "tools/bench/bench_model.h"
#include "tools/common/device_tools.h"
#include "tools/common/json.h"
#include "tools/common/timing.h"

namespace flux::bench {

namespace {

using tools::DeviceBuffer;

// The gather kernel's copy rate (GB/s of shard bytes) on `sms` SMs: rows [shard, 2 * shard) of a
// [2 * shard, k] buffer copied from a second local buffer, the ready flags already at the epoch.
double measure_pull_gbps(int64_t shard_rows, int64_t k, int sms, int iters, int warmup, cudaStream_t stream) {
  const size_t bytes = size_t(2 * shard_rows * k) * 2;
  DeviceBuffer mine(bytes), peer(bytes), words(64 * sizeof(uint32_t)), status(sizeof(DeviceStatus) + 64);
  const int32_t block_rows = 128;
  const int32_t blocks = static_cast<int32_t>((2 * shard_rows + block_rows - 1) / block_rows);
  DeviceBuffer flags(size_t(blocks) * sizeof(uint32_t)), parts(size_t(blocks) * sizeof(uint32_t));
  DeviceBuffer peers(2 * sizeof(void*));
  void* host_peers[2] = {mine.ptr, peer.ptr};
  FLUX_CUDA_CHECK(cudaMemcpy(peers.ptr, host_peers, sizeof(host_peers), cudaMemcpyHostToDevice));
  // words[0] = the epoch (1), words[1..2] = ready[0..1] = 1.
  const uint32_t host_words[3] = {1u, 1u, 1u};
  FLUX_CUDA_CHECK(cudaMemcpy(words.ptr, host_words, sizeof(host_words), cudaMemcpyHostToDevice));
  FLUX_CUDA_CHECK(cudaMemset(status.ptr, 0, status.bytes));
  tools::fill_random(peer.ptr, 2 * shard_rows * k, DType::kBF16, 99, 1.0f, stream);
  device::AgGatherParams p;
  p.m = 2 * shard_rows;
  p.k = k;
  p.segment_rows = shard_rows;
  p.rank = 0;
  p.world = 2;
  p.block_rows = block_rows;
  p.num_blocks = blocks;
  p.elem_bytes = 2;
  p.buffers = static_cast<void* const*>(peers.ptr);
  p.epoch = words.as<uint32_t>();
  p.ready = words.as<uint32_t>() + 1;
  p.flags = flags.as<uint32_t>();
  p.parts = parts.as<uint32_t>();
  p.ctx.status = static_cast<DeviceStatus*>(status.ptr);
  p.ctx.timeout_ns = 1000000000ull;  // the flags are raised: no wait can last
  std::vector<tools::TimedRun> runs{{"pull", [&](int) {
                                       FLUX_CUDA_CHECK(cudaMemsetAsync(p.parts, 0, parts.bytes, stream));
                                       device::launch_ag_gather(p, sms, stream);
                                     }}};
  // The memset is in the timed region too; it is tiny next to the copy (blocks x 4 bytes).
  const double ms = tools::median(tools::time_interleaved(runs, stream, warmup, iters)[0]);
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  return double(shard_rows * k * 2) / (ms * 1e-3) / 1e9;
}

double measure_gemm_us(const GemmDesc& desc, int64_t m, int max_sms, int iters, int warmup, int64_t l2_bytes,
                       cudaStream_t stream) {
  GemmOptions o;
  o.max_sms = max_sms;
  GemmPlan plan(desc, o);
  const size_t es = dtype_size(desc.dtype);
  const int64_t set_bytes = (m * desc.k + desc.n * desc.k) * int64_t(es);
  const int sets = tools::rotating_sets(set_bytes, l2_bytes, 8);
  std::vector<std::unique_ptr<DeviceBuffer>> a, b;
  for (int s = 0; s < sets; ++s) {
    a.push_back(std::make_unique<DeviceBuffer>(size_t(m * desc.k) * es));
    b.push_back(std::make_unique<DeviceBuffer>(size_t(desc.n * desc.k) * es));
    tools::fill_random(a[s]->ptr, m * desc.k, desc.dtype, 11 + s, 1.0f, stream);
    tools::fill_random(b[s]->ptr, desc.n * desc.k, desc.dtype, 101 + s, 1.0f, stream);
  }
  DeviceBuffer c(size_t(m * desc.n) * es);
  std::vector<tools::TimedRun> runs{{"gemm", [&](int i) {
                                       GemmArgs g;
                                       g.m = m;
                                       g.a = a[size_t(i) % a.size()]->ptr;
                                       g.b = b[size_t(i) % b.size()]->ptr;
                                       g.c = c.ptr;
                                       plan.run(g, stream);
                                     }}};
  const double ms = tools::median(tools::time_interleaved(runs, stream, warmup, iters)[0]);
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  return ms * 1e3;
}

double get_double(const Args& args, const std::string& name, double fallback) {
  const std::string text = args.get(name, "");
  if (text.empty()) return fallback;
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw InvalidArgument("flux-bench model: " + name + " '" + text + "' is not a number");
}

}  // namespace

int run_model_bench(const std::vector<std::string>& argv, const std::string& command_line) {
  Args args(argv,
            {"--shapes", "--tp", "--dtypes", "--side-sms", "--link-gbps", "--link-latency-us", "--collective-gbps",
             "--fixed-us", "--iters", "--warmup", "--json"},
            {});
  ops::LinkSpec link;
  link.bandwidth_gbps = get_double(args, "--link-gbps", link.bandwidth_gbps);
  link.latency_us = get_double(args, "--link-latency-us", link.latency_us);
  const double collective = get_double(args, "--collective-gbps", 0.0);
  const double fixed_us = get_double(args, "--fixed-us", ops::kRuleFusedFixedUs);
  const int side_sms = static_cast<int>(args.get_int("--side-sms", 8));
  const int iters = static_cast<int>(args.get_int("--iters", 20));
  const int warmup = static_cast<int>(args.get_int("--warmup", 3));
  FLUX_CHECK_ARG(iters >= 5 && warmup >= 1, "flux-bench model: --iters ", iters, " --warmup ", warmup,
                 " (expected >= 5 and >= 1)");
  std::vector<Shape> shapes = select_shapes(args, gemm_suite_shapes());
  if (!args.get("--shapes", "").empty()) {  // user shapes: both ops at every --tp
    std::vector<Shape> at_tp;
    for (const std::string& t : args.get_list("--tp", "2,4,8")) {
      for (Shape s : shapes) {
        s.tp = std::stoi(t);
        FLUX_CHECK_ARG(s.tp >= 2, "flux-bench model: --tp ", t, " (expected >= 2)");
        for (const char* op : {"ag_gemm", "gemm_rs", "gemm_ar"}) {
          s.name = op;
          at_tp.push_back(s);
        }
      }
    }
    shapes = at_tp;
  } else {  // the suite: GEMM+AR (row-parallel without sequence parallelism) on GEMM+RS's per-rank shapes
    const size_t suite = shapes.size();
    for (size_t i = 0; i < suite; ++i) {
      if (shapes[i].name != "gemm_rs") continue;
      Shape s = shapes[i];
      s.name = "gemm_ar";
      shapes.push_back(s);
    }
  }
  std::vector<DType> dtypes;
  for (const std::string& d : args.get_list("--dtypes", "bf16")) dtypes.push_back(parse_dtype(d));
  const DeviceLimits limits = query_device_limits(-1);  // throws Unsupported without a GPU
  FLUX_CHECK_ARG(side_sms >= 1 && side_sms < limits.sm_count, "flux-bench model: --side-sms ", side_sms,
                 " (expected 1..", limits.sm_count - 1, ")");
  cudaStream_t stream = nullptr;
  FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  FILE* json = nullptr;
  const std::string json_path = args.get("--json", "");
  if (!json_path.empty()) {
    json = std::fopen(json_path.c_str(), "w");
    FLUX_CHECK_ARG(json != nullptr, "flux-bench model: cannot open --json ", json_path);
  }
  const std::string date = tools::utc_now_iso8601();
  const double in_flight = double(side_sms) * double(device::kAgGatherBytesInFlightPerSm);
  std::printf("flux-bench model on %s (%d SMs): side kernel on %d SMs keeps %.0f KB in flight; link %.0f GB/s, %.1f us "
              "(Little's law: %.0f KB needed for the link's rate)\n",
              limits.name.c_str(), limits.sm_count, side_sms, in_flight / 1024.0, link.bandwidth_gbps, link.latency_us,
              ops::bytes_in_flight_needed(link.bandwidth_gbps, link.latency_us) / 1024.0);
  std::printf("%-8s %-18s %3s %5s %9s %9s %9s %7s | %9s %9s %9s %9s %9s %-10s %6s %-9s\n", "op", "shape (MxNxK)",
              "tp", "dtype", "gemm_all", "gemm_k", "gemm_chk", "pull", "seq_us", "fused_us", "2shot_us", "rs_ag_us",
              "decomp_us", "best", "hidden", "limit");
  for (DType dtype : dtypes) {
    for (const Shape& s : shapes) {
      const ops::FusedOp op = s.name == "ag_gemm"   ? ops::FusedOp::kAgGemm
                              : s.name == "gemm_ar" ? ops::FusedOp::kGemmAr
                                                    : ops::FusedOp::kGemmRs;
      const GemmDesc desc{s.n, s.k, dtype, WeightLayout::kNK};
      ops::ComponentRates r;
      r.gemm_us_all_sms = measure_gemm_us(desc, s.m, 0, iters, warmup, limits.l2_bytes, stream);
      r.gemm_us_reduced_sms = measure_gemm_us(desc, s.m, limits.sm_count - side_sms, iters, warmup, limits.l2_bytes, stream);
      // One decomposed chunk beside NCCL (4 column chunks; AG+GEMM: one shard per chunk, as the op runs it).
      const int chunks = op == ops::FusedOp::kAgGemm ? s.tp : 4;
      const GemmDesc chunk_desc{op == ops::FusedOp::kAgGemm ? s.n : std::max<int64_t>(s.n / chunks / 8 * 8, 8), s.k, dtype,
                                WeightLayout::kNK};
      r.gemm_us_chunk = measure_gemm_us(chunk_desc, op == ops::FusedOp::kAgGemm ? std::max<int64_t>(s.m / s.tp, 1) : s.m,
                                        limits.sm_count - ops::kRuleCollectiveSms, iters, warmup, limits.l2_bytes, stream);
      // The bytes one pull step moves: a peer's M/W rows (GEMM+RS, AG+GEMM), a peer's whole partial (GEMM+AR).
      const int64_t pull_rows = std::max<int64_t>(op == ops::FusedOp::kGemmAr ? s.m : s.m / s.tp, 128);
      const int64_t pull_cols = op == ops::FusedOp::kAgGemm ? s.k : s.n;
      r.pull_kernel_gbps = measure_pull_gbps(pull_rows, pull_cols, side_sms, iters, warmup, stream);
      r.pull_bytes_in_flight = in_flight;
      r.collective_gbps = collective;
      r.fused_fixed_us = fixed_us;
      r.elem_bytes = op == ops::FusedOp::kAgGemm ? int(dtype_size(dtype)) : 2;
      const ops::PathTimes t = ops::predict_paths(op, s.m, s.n, s.k, s.tp, r, link, chunks);
      // What the ops' rule predicts for the same call, from the GEMM core's own predictions and its constants.
      const ops::RuleContext rule_ctx = ops::rule_context(limits.sm_count, dtype, side_sms, limits.hbm_bytes_per_s);
      const ops::PathTimes rule = ops::rule_paths(op, s.m, s.n, s.k, s.tp, rule_ctx);
      const char* op_name = s.name.c_str();
      char two_shot[16] = "-", rs_ag[16] = "-";
      if (op == ops::FusedOp::kGemmAr) std::snprintf(two_shot, sizeof(two_shot), "%.1f", t.two_shot_us);
      if (op == ops::FusedOp::kGemmAr) std::snprintf(rs_ag, sizeof(rs_ag), "%.1f", t.rs_ag_us);
      std::printf("%-8s %6ldx%5ldx%5ld %3d %5s %9.1f %9.1f %9.1f %7.0f | %9.1f %9.1f %9s %9s %9.1f %-10s %6.2f %-9s rule: %s\n",
                  op_name, long(s.m), long(s.n), long(s.k), s.tp, to_string(dtype), r.gemm_us_all_sms,
                  r.gemm_us_reduced_sms, r.gemm_us_chunk, r.pull_kernel_gbps, t.sequential_us, t.fused_us, two_shot, rs_ag,
                  t.decomposed_us, t.best.c_str(), t.hidden_fraction, t.limit.c_str(), rule.best.c_str());
      if (json) {
        tools::JsonLine row;
        row.add("op", "model")
            .add("fused_op", op_name)
            .add("dtype", to_string(dtype))
            .add("m", s.m)
            .add("n", s.n)
            .add("k", s.k)
            .add("tp", s.tp)
            .add("side_sms", side_sms)
            .add("gemm_us_all_sms", r.gemm_us_all_sms)
            .add("gemm_us_reduced_sms", r.gemm_us_reduced_sms)
            .add("gemm_us_chunk", r.gemm_us_chunk)
            .add("chunks", chunks)
            .add("pull_kernel_gbps", r.pull_kernel_gbps)
            .add("pull_bytes_in_flight", r.pull_bytes_in_flight)
            .add("bytes_in_flight_needed", ops::bytes_in_flight_needed(link.bandwidth_gbps, link.latency_us))
            .add("link_gbps", link.bandwidth_gbps)
            .add("link_latency_us", link.latency_us)
            .add("collective_gbps", collective > 0 ? collective : 0.8 * link.bandwidth_gbps)
            .add("fused_fixed_us", fixed_us)
            .add("comm_bytes", t.comm_bytes)
            .add("pull_gbps", t.pull_gbps)
            .add("pull_limit", t.limit)
            .add("sequential_us", t.sequential_us)
            .add("fused_us", t.fused_us)
            .add("decomposed_us", t.decomposed_us)
            .add("two_shot_us", op == ops::FusedOp::kGemmAr ? std::optional<double>(t.two_shot_us) : std::nullopt)
            .add("rs_ag_us", op == ops::FusedOp::kGemmAr ? std::optional<double>(t.rs_ag_us) : std::nullopt)
            .add("best", t.best)
            .add("rule_best", rule.best)
            .add("rule_gemm_us_all_sms", rule.sequential_us - rule.comm_sequential_us)
            .add("hidden_fraction", t.hidden_fraction)
            .add("gpu", limits.name)
            .add("date", date)
            .add("command", command_line);
        std::fprintf(json, "%s\n", row.str().c_str());
      }
    }
  }
  if (json) std::fclose(json);
  FLUX_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}

}  // namespace flux::bench
