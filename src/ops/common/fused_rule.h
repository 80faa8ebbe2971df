// src/ops/common/fused_rule.h — the path rule of every fused op, written once: the overlap model
// (overlap_model.h) fed with the GEMM core's own predicted times and the component rates below, the
// fastest predicted path chosen (GPU-free, CPU-tested through the ops' choose_* functions).
//
// Inputs per call: the per-rank shape, W and the op; the GEMM times are the GEMM core's heuristic
// prediction (select_gemm_config's predicted_us: its wave / memory model, fitted on the corpus's tune
// half; the rate table of the device's HBM bandwidth, RuleContext::hbm_bytes_per_s) on all SMs, on the SMs a
// fused path leaves (SMs - helper_sms), and for one decomposed chunk on the SMs the collective beside it leaves
// (SMs - kRuleCollectiveSms). The rest are constants:
//   kRulePullGbpsPerSm  the pull kernels' own rate per SM: `flux-bench model` on the H200 measured the
//                       gather kernel at 236-279 GB/s on 8 SMs for every suite shape with M >= 4096
//                       (bench/results/model_h200_20261202_s7.jsonl), about 30 GB/s per SM;
//   kRuleFusedFixedUs   the fused paths' per-call barrier and side-kernel launch (flux-bench gemm-ar's fixed
//                       cost per call at W = 2 on one GPU is a few microseconds; 5 is `flux-bench model`'s
//                       default);
//   kRuleCollectiveSms  the SMs NCCL's kernels hold beside a decomposed chunk's GEMM (its ring uses one CTA
//                       per channel; 16 channels is an assumption for NVLink 4 without NVLS);
//   the link            LinkSpec's defaults (450 GB/s per direction, 3 us; cited in overlap_model.h), NCCL
//                       at 80% of it.
// The model assumes one GPU per rank on NVLink; ranks sharing one GPU (the tests) take the same decision
// (any path is right there, only slower or faster). NOTE: no node with several GPUs has checked these
// predictions yet; `flux-bench model` prints them with rates measured on the GPU present.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "flux/gemm.h"
#include "src/ops/common/overlap_model.h"

namespace flux::ops {

constexpr double kRulePullGbpsPerSm = 30.0;
constexpr double kRuleFusedFixedUs = 5.0;
constexpr int kRuleCollectiveSms = 16;

// What the rule knows about the call beyond its shape.
struct RuleContext {
  int sm_count = 132;         // the device's SMs (H200 SXM)
  int helper_sms = 8;         // the fused paths' pull / gather kernel SMs
  DType dtype = DType::kBF16;  // the inputs (e4m3: the FP8 configs' predictions, half the bytes of A moved)
  int out_bytes = 2;          // bytes of an element of the partials / out (bf16 / fp16)
  int decomposed_chunks = 4;  // GEMM+RS / GEMM+AR column chunks (AG+GEMM's decomposed path: one per shard)
  // The device's peak HBM bandwidth (DeviceLimits::hbm_bytes_per_s): the GEMM heuristic takes its large-M rate
  // table by it (an H100's 3.35 TB/s its own table); 0, as a DeviceLimits that does not report it: the default.
  int64_t hbm_bytes_per_s = 0;
};

// The context of one op's call: this device's SMs and HBM bandwidth, the op's helper SMs, the input type.
inline RuleContext rule_context(int sm_count, DType dtype, int helper_sms, int64_t hbm_bytes_per_s) {
  RuleContext ctx;
  ctx.sm_count = sm_count;
  ctx.dtype = dtype;
  ctx.helper_sms = helper_sms;
  ctx.hbm_bytes_per_s = hbm_bytes_per_s;
  return ctx;
}

// The model's prediction of every path of `op` for a per-rank m x n x k at W ranks (AG+GEMM: n per rank,
// k the whole K; GEMM+RS / AR: k per rank). W >= 2.
PathTimes rule_paths(FusedOp op, int64_t m, int64_t n, int64_t k, int world, const RuleContext& ctx);

// The fastest predicted path that `usable` accepts (empty: every path), by PathTimes::best's names
// (fused, two_shot, rs_ag, sequential, decomposed); `reason` (if not null) gets the ranking:
// "rule (overlap model, predicted): decomposed 1234.5 us < fused 1300.1 us < ...".
std::string rule_pick(FusedOp op, const PathTimes& t, const std::function<bool(const std::string&)>& usable,
                      std::string* reason);

// An op's rule for one call: W = 1 is "fused" (the GEMM core alone; the collective is the identity), else
// rule_pick over rule_paths with `ctx` (this device's SMs and HBM bandwidth, the op's helper SMs, the input type).
std::string rule_choose(FusedOp op, int64_t m, int64_t n, int64_t k, int world, const RuleContext& ctx,
                        const std::function<bool(const std::string&)>& usable, std::string* reason);

}  // namespace flux::ops
