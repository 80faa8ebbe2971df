// flux/gemm_ar.h — fused GEMM + AllReduce (the row-parallel layer without sequence parallelism: the
// decode path of inference).
//
//   rank r of W:  A_r [M, K/W], B_r [N, K/W] (kNK) or [K/W, N] (kKN), bias [N] optional
//                 out_r [M, N] = sum_s A_s B_s^T (+ bias, added once), the same bits on every rank
//
// The W partials of an output element are summed in fp32 in one fixed order (sources W-1, ..., 0) on
// every rank, so every rank's out is bitwise identical, run after run. M need not be a multiple of W.
//
// Paths (GemmArPath), behind one plan and run(); they share the GEMM+RS machinery (gemm_rs.cpp):
//   kOneShot     the GEMM core computes this rank's partial into symmetric memory and publishes each
//                tile; a pull kernel on a few SMs beside it reads every rank's tile as it is published
//                and sums all W of them (each rank reads W x M x N partials: the decode path, small M);
//   kSequential  cuBLASLt GEMM, then NCCL's all-reduce when every rank has its own GPU, Flux's pull
//                kernel over all rows after the GEMM when ranks share a GPU;
//   kDecomposed  the GEMM in column chunks, the all-reduce of chunk i beside the GEMM of chunk i+1.
// Not built yet (issue 12): two-shot (reduce-scatter then all-gather of the reduced rows) and the
// RS + AG composition. kAuto applies the GEMM+RS rule (choose_gemm_rs_impl); FLUX_GEMM_AR_PATH or
// GemmArOptions::path override it. W = 1 runs the GEMM core straight into out.
//
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

enum class GemmArPath : int32_t { kAuto = 0, kOneShot = 1, kSequential = 2, kDecomposed = 3 };
const char* to_string(GemmArPath path);
GemmArPath parse_gemm_ar_path(const std::string& text);  // auto, one_shot, sequential, decomposed

struct GemmArDesc {
  int64_t max_m = 0;       // largest M run() will see
  int64_t n = 0;
  int64_t k_per_rank = 0;  // K / W
  DType dtype = DType::kBF16;
  WeightLayout layout = WeightLayout::kNK;
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
};

class GemmArPlan {
 public:
  GemmArPlan(Communicator& comm, const GemmArDesc& desc, const GemmArOptions& options = {});
  ~GemmArPlan();
  GemmArPlan(const GemmArPlan&) = delete;
  GemmArPlan& operator=(const GemmArPlan&) = delete;

  // The path, tile order and pull-kernel SMs run() uses for M (the GEMM+RS layout type: segment_rows is M).
  GemmRsLayout layout(int64_t m, GemmArPath path = GemmArPath::kAuto) const;
  void run(const GemmArArgs& args, cudaStream_t stream, GemmArPath path = GemmArPath::kAuto);
  void check_status();
  void release();  // collective

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flux
