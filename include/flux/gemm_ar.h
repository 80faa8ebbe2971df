// flux/gemm_ar.h — fused GEMM + AllReduce (the row-parallel layer without sequence parallelism: the
// decode path of inference).
//
//   rank r of W:  A_r [M, K/W], B_r [N, K/W] (kNK) or [K/W, N] (kKN), bias [N] optional
//                 out_r [M, N] = sum_s A_s B_s^T (+ bias, added once), the same bits on every rank
//
// The W partials of an output element are summed in fp32 in one fixed order per path, and each element
// is summed once (one-shot: by every rank in the order W-1, ..., 0; two-shot: by the rank owning its row
// segment, in that rank's ring order), so every rank's out is bitwise identical, run after run (the
// paths differ from each other in the last bits). M need not be a multiple of W.
//
// Paths (GemmArPath), behind one plan and run(); they share the GEMM+RS machinery (gemm_rs.cpp):
//   kOneShot     the GEMM core computes this rank's partial into symmetric memory and publishes each
//                tile; a pull kernel on a few SMs beside it reads every rank's tile as it is published
//                and sums all W of them (each rank reads W x M x N partials: the decode path, small M);
//   kTwoShot     a reduce-scatter fused into the GEMM, then an all-gather of the reduced rows: the GEMM
//                runs in GEMM+RS's rank-rotated order and the pull kernel beside it sums only this
//                rank's segment of ceil(M / W) rows (from every rank's tiles as they are published)
//                into symmetric memory; once its segment is final each rank raises one flag, and a
//                gather kernel copies every rank's reduced segment into out. Each rank reads
//                2 (W-1)/W x M x N elements instead of one-shot's (W-1) x M x N, at the cost of a second
//                phase after the GEMM (for large M x N at W >= 4);
//   kSequential  cuBLASLt GEMM, then NCCL's all-reduce when every rank has its own GPU, Flux's pull
//                kernel over all rows after the GEMM when ranks share a GPU;
//   kDecomposed  the GEMM in column chunks, the all-reduce of chunk i beside the GEMM of chunk i+1;
//   kRsAg        the composition of the two collectives: two-shot's first shot (GEMM+RS fused over
//                ceil(M / W)-row segments into symmetric memory), joined, then an all-gather of the
//                reduced segments: NCCL's (ncclAllGather) when every rank has its own GPU, Flux's
//                gather kernel after the join when ranks share a GPU. Same bits as two-shot.
// kAuto picks the path the overlap model predicts fastest (choose_gemm_ar_path, src/ops/common/
// fused_rule.h; no node with several GPUs has checked it yet). W = 1 runs the GEMM core straight into out.
//
// FP8 inputs (e4m3 with scales, bf16 / fp16 partials and out) as GEMM+RS.
// Collective, CUDA-graph safe and fail-stop exactly as GEMM+RS (flux/gemm_rs.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "flux/gemm.h"
#include "flux/gemm_rs.h"
#include "flux/runtime.h"
#include "flux/tensor.h"

namespace flux {

enum class GemmArPath : int32_t { kAuto = 0, kOneShot = 1, kSequential = 2, kDecomposed = 3, kTwoShot = 4, kRsAg = 5 };
const char* to_string(GemmArPath path);
GemmArPath parse_gemm_ar_path(const std::string& text);  // auto, one_shot, two_shot, rs_ag, sequential, decomposed

// The rule (as choose_gemm_rs_impl, over GEMM+AR's five paths): W = 1 is the GEMM alone (kOneShot).
GemmArPath choose_gemm_ar_path(int64_t m, int64_t n, int64_t k_per_rank, int world_size, std::string* reason,
                               int sm_count = 132, DType dtype = DType::kBF16, int pull_sms = 8,
                               int64_t hbm_bytes_per_s = 0);

struct GemmArDesc {
  int64_t max_m = 0;       // largest M run() will see
  int64_t n = 0;
  int64_t k_per_rank = 0;  // K / W
  DType dtype = DType::kBF16;  // A and B: bf16, fp16 or e4m3
  WeightLayout layout = WeightLayout::kNK;
  DType out_dtype = DType::kBF16;      // e4m3 only: partials, out and bias (bf16 or fp16); else dtype
  ScaleKind scale = ScaleKind::kNone;  // e4m3 only: kPerTensor or kPerRowCol
};

struct GemmArOptions {
  GemmArPath path = GemmArPath::kAuto;  // kAuto: FLUX_GEMM_AR_PATH, then the rule
  int32_t pull_sms = 0;                 // one-shot: SMs of the pull kernel; 0 = FLUX_GEMM_RS_REDUCE_SMS
  int32_t decomposed_chunks = 0;        // 0 = 4
  GemmOptions gemm;
  uint32_t initial_epoch = 1;
};

struct GemmArArgs {
  TensorRef a;     // [M, K/W]
  TensorRef b;     // [N, K/W] or [K/W, N]
  TensorRef bias;  // [1, N] or data == nullptr
  TensorRef out;   // [M, N]
  // e4m3 only: this rank's scales, as GemmRsArgs (scale_a [1, M] per row).
  TensorRef scale_a;
  TensorRef scale_b;
};

class GemmArPlan {
 public:
  GemmArPlan(Communicator& comm, const GemmArDesc& desc, const GemmArOptions& options = {});
  ~GemmArPlan();
  GemmArPlan(const GemmArPlan&) = delete;
  GemmArPlan& operator=(const GemmArPlan&) = delete;

  // The path, tile order and pull-kernel SMs run() uses for M (the GEMM+RS layout type: impl kFused with
  // shots 1 or 2 for the fused paths; segment_rows is the rows each rank sums: M, or ceil(M / W) for two-shot).
  GemmRsLayout layout(int64_t m, GemmArPath path = GemmArPath::kAuto) const;
  void run(const GemmArArgs& args, cudaStream_t stream, GemmArPath path = GemmArPath::kAuto);
  void check_status();
  void release();  // collective

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flux
