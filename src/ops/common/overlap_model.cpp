// src/ops/common/overlap_model.cpp — the arithmetic of overlap_model.h (reasons there).
#include "src/ops/common/overlap_model.h"

#include <algorithm>

#include "flux/error.h"
#include "src/common/check.h"

namespace flux::ops {

double fused_op_comm_bytes(FusedOp op, int64_t m, int64_t n, int64_t k, int world, int elem_bytes) {
  FLUX_CHECK_ARG(world >= 1 && m >= 1 && n >= 1 && k >= 1, "flux model: shape ", m, "x", n, "x", k, " at W = ", world,
                 " (expected every dimension >= 1 and W >= 1)");
  // this rank's rows (GEMM+RS), one shard (AG+GEMM), every row of each peer's partial (GEMM+AR one-shot)
  const double rows = op == FusedOp::kGemmAr ? double(m) : double(m) / double(world);
  const double cols = op == FusedOp::kAgGemm ? double(k) : double(n);
  return double(world - 1) * rows * cols * double(elem_bytes);
}

std::vector<PathTime> path_times(FusedOp op, const PathTimes& t) {
  std::vector<PathTime> paths{{"fused", t.fused_us, true}};
  if (op == FusedOp::kGemmAr) {
    paths.push_back({"two_shot", t.two_shot_us, true});
    paths.push_back({"rs_ag", t.rs_ag_us, true});
  }
  paths.push_back({"sequential", t.sequential_us, false});
  paths.push_back({"decomposed", t.decomposed_us, false});
  return paths;
}

PathTimes predict_paths(FusedOp op, int64_t m, int64_t n, int64_t k, int world, const ComponentRates& r,
                        const LinkSpec& link, int chunks) {
  FLUX_CHECK_ARG(r.gemm_us_all_sms > 0 && r.gemm_us_reduced_sms > 0 && r.pull_kernel_gbps > 0 &&
                     r.pull_bytes_in_flight > 0 && r.collective_gbps >= 0 && r.fused_fixed_us >= 0 &&
                     r.chunk_launch_us >= 0 && r.gemm_us_chunk >= 0 && r.elem_bytes >= 1,
                 "flux model: component rates must be measured (> 0; collective and fixed costs >= 0): gemm ",
                 r.gemm_us_all_sms, " / ", r.gemm_us_reduced_sms, " us, pull ", r.pull_kernel_gbps, " GB/s, in flight ",
                 r.pull_bytes_in_flight, " B");
  FLUX_CHECK_ARG(link.bandwidth_gbps > 0 && link.latency_us >= 0, "flux model: link ", link.bandwidth_gbps, " GB/s, ",
                 link.latency_us, " us (expected bandwidth > 0, latency >= 0)");
  FLUX_CHECK_ARG(chunks >= 1, "flux model: decomposed chunks ", chunks, " (expected >= 1)");
  PathTimes t;
  t.comm_bytes = fused_op_comm_bytes(op, m, n, k, world, r.elem_bytes);
  const double g_all = r.gemm_us_all_sms, g_k = r.gemm_us_reduced_sms;
  if (world == 1) {  // nothing to move: every path is the GEMM alone
    t.sequential_us = t.fused_us = t.decomposed_us = g_all;
    if (op == FusedOp::kGemmAr) t.two_shot_us = t.rs_ag_us = g_all;
    t.best = "fused";
    t.limit = "none";
    return t;
  }
  // The fused path's rate: the kernel's own, the link's, or what its bytes in flight sustain.
  const double in_flight_gbps =
      link.latency_us > 0 ? r.pull_bytes_in_flight / (link.latency_us * 1e-6) / 1e9 : link.bandwidth_gbps;
  t.pull_gbps = std::min({r.pull_kernel_gbps, link.bandwidth_gbps, in_flight_gbps});
  t.limit = t.pull_gbps == r.pull_kernel_gbps ? "kernel" : (t.pull_gbps == link.bandwidth_gbps ? "link" : "in-flight");
  const double collective = r.collective_gbps > 0 ? r.collective_gbps : 0.8 * link.bandwidth_gbps;
  const double us_per_byte_fused = 1e6 / (t.pull_gbps * 1e9);
  t.comm_fused_us = t.comm_bytes * us_per_byte_fused + link.latency_us;
  // GEMM+AR: (W-1)/W of the matrix, what one ring pass (or one shot of two-shot) moves per rank. NCCL's
  // ring: a reduce-scatter or all-gather moves C; an all-reduce is both, twice that share.
  const double ar_share = double(world - 1) / double(world) * double(m) * double(n) * double(r.elem_bytes);
  const double seq_bytes = op == FusedOp::kGemmAr ? 2.0 * ar_share : t.comm_bytes;
  const double us_per_byte_collective = 1e6 / (collective * 1e9);
  t.comm_sequential_us = seq_bytes * us_per_byte_collective + link.latency_us;

  t.sequential_us = g_all + t.comm_sequential_us;
  const double g_step = g_k / world;
  // GEMM+RS's pipeline (also GEMM+AR's one-shot and two-shot's first shot): the last step's pulls follow it.
  auto reduce_pipeline = [&](double comm_us) { return std::max(g_k + comm_us / (world - 1), g_step + comm_us); };
  const double pipeline = op != FusedOp::kAgGemm ? reduce_pipeline(t.comm_fused_us)
                                                 : std::max(g_k, t.comm_fused_us + g_step);
  t.fused_us = r.fused_fixed_us + pipeline;
  if (op == FusedOp::kGemmAr) {
    const double shot_us = ar_share * us_per_byte_fused + link.latency_us;
    t.two_shot_us = r.fused_fixed_us + reduce_pipeline(shot_us) + shot_us;
    // The composition: GEMM+RS's fused path, then the collective's all-gather of the reduced rows.
    t.rs_ag_us = r.fused_fixed_us + reduce_pipeline(shot_us) + ar_share * us_per_byte_collective + link.latency_us;
  }
  const double g_chunk = r.gemm_us_chunk > 0 ? r.gemm_us_chunk : g_all / chunks;
  const double c_chunk = seq_bytes * us_per_byte_collective / chunks + link.latency_us;
  t.decomposed_us = std::max(chunks * g_chunk + c_chunk, g_chunk + chunks * c_chunk) + chunks * r.chunk_launch_us;
  double best = -1.0, fused_best = -1.0;
  for (const PathTime& p : path_times(op, t)) {  // the first on ties
    if (best < 0 || p.us < best) {
      best = p.us;
      t.best = p.name;
    }
    if (p.overlapped && (fused_best < 0 || p.us < fused_best)) fused_best = p.us;
  }
  t.hidden_fraction = std::clamp((t.sequential_us - fused_best) / t.comm_sequential_us, 0.0, 1.0);
  return t;
}

}  // namespace flux::ops
