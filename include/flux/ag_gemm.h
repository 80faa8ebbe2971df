// flux/ag_gemm.h — fused AllGather + GEMM (the column-parallel half of a tensor-parallel layer).
//
//   rank r of W:  A_r [M/W, K] (this rank's rows of the activations), B_r [N/W, K] (kNK) or [K, N/W] (kKN),
//                 bias [N/W] optional
//                 out_r [M, N/W] = concat(A_0, ..., A_{W-1}) B_r^T (+ bias)
//                 and, on request, the gathered A [M, K] (a view of the plan's workspace: no extra copy;
//                 valid until the next run()).
// M must be a multiple of W.
// FP8 (dtype kE4M3, B as [N/W, K] only): A and B in e4m3, out and bias in out_dtype (bf16 / fp16), scaled
// as the GEMM core does (flux/gemm.h: out = acc * sa * sb + bias). A is gathered in FP8 (half the bytes
// of bf16 over the link) and, with per-row scales, so are its row scales: scale_a is this rank's
// [1, M/W] and the GEMM reads the gathered [1, M] (gathered_scale_a()). Per tensor, scale_a is the
// scale of the whole gathered A: every rank passes the same value (a global amax; shards quantized
// each with their own scale need per-row scales).
//
// Paths (AgGemmImpl), all behind the same plan and run():
//   kFused        this rank's shard goes into its symmetric gather buffer, a gather kernel on a few SMs
//                 pulls the peers' shards into it in ring order (rank+1, rank+2, ...) and releases each
//                 M-block's flag once all of its rows have arrived; the GEMM core, on the remaining SMs,
//                 visits the local shard's tiles first, then the ring, and its producer waits on the
//                 flag of each M-block before loading it (the core's wait-before-load);
//   kFusedCopyEngine  the same with the copy engine moving the shards (cudaMemcpyAsync on a side stream,
//                 one-CTA flag kernels around each shard on an SM the GEMM leaves free): only when every
//                 rank has its own GPU (a same-GPU device-to-device copy needs an SM, which the waiting
//                 GEMM holds);
//   kSequential   all-gather (NCCL's with one GPU per rank, Flux's gather kernel otherwise), then cuBLASLt;
//   kDecomposed   per-shard copies with one cuBLASLt GEMM per shard on alternating streams (torch async-TP).
// kAuto picks the path the overlap model predicts fastest of fused (SM gather), sequential and decomposed
// (choose_ag_gemm_impl; src/ops/common/fused_rule.h); FLUX_AG_GEMM_IMPL overrides it.
// Ranks sharing a GPU split its SMs between them for the fused paths (every rank's GEMM and gather
// are then resident at once, so no rank's waiting GEMM can starve another's gather).
// Collective: every rank builds the plan with the same description (checked on the values every rank
// resolved, knobs included) and calls run() in the same order. run() does not synchronize the host.
// CUDA graphs: every path may be captured and replayed any number of times (inputs rewritten in place
// between replays), mixed with eager calls: per-call state lives on the device (op_runtime.h).
// Fail-stop: after a timeout or a peer's failure every later run() of any plan on the communicator
// throws the first failure (Communicator::check_fault).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "flux/gemm.h"
#include "flux/runtime.h"
#include "flux/tensor.h"

namespace flux {

enum class AgGemmImpl : int32_t { kAuto = 0, kFused = 1, kFusedCopyEngine = 2, kSequential = 3, kDecomposed = 4 };
const char* to_string(AgGemmImpl impl);
AgGemmImpl parse_ag_gemm_impl(const std::string& text);  // auto, fused, fused_ce, sequential, decomposed

struct AgGemmDesc {
  int64_t max_m = 0;       // largest M (all ranks' rows) run() will see
  int64_t n_per_rank = 0;  // N / W
  int64_t k = 0;
  DType dtype = DType::kBF16;  // A and B: bf16, fp16 or e4m3
  WeightLayout layout = WeightLayout::kNK;
  DType out_dtype = DType::kBF16;      // e4m3 only: out and bias (bf16 or fp16); else out is dtype
  ScaleKind scale = ScaleKind::kNone;  // e4m3 only: kPerTensor or kPerRowCol
};

struct AgGemmOptions {
  AgGemmImpl impl = AgGemmImpl::kAuto;  // kAuto: FLUX_AG_GEMM_IMPL, then the rule
  int32_t gather_sms = 0;               // fused: SMs of the gather kernel; 0 = FLUX_AG_GEMM_GATHER_SMS
  GemmOptions gemm;                     // GEMM core options (config, wait timeout, ...)
  uint32_t initial_epoch = 1;           // the first call's epoch (tests start near 2^32 to cross the wrap)
};

struct AgGemmArgs {
  TensorRef a_shard;  // [M/W, K]
  TensorRef b;        // [N/W, K] or [K, N/W]
  TensorRef bias;     // [1, N/W] or data == nullptr
  TensorRef out;      // [M, N/W]
  // e4m3 only (fp32): per tensor [1, 1] each; per row / column scale_a [1, M/W] (this rank's rows) and
  // scale_b [1, N/W].
  TensorRef scale_a;
  TensorRef scale_b;
};

struct AgGemmLayout {
  AgGemmImpl impl = AgGemmImpl::kFused;
  std::string reason;
  int64_t m = 0, shard_rows = 0;
  int32_t gemm_sms = 0;    // SMs of the GEMM core (fused paths)
  int32_t gather_sms = 0;  // SMs of the gather kernel (kFused)
  TileOrderSpec order;     // local shard first, then the ring
  // The GEMM core's selection for the path's GEMM (fused, fused_ce; W = 1: the whole-GPU plan's), made
  // once per call: the GEMM runs it (GemmArgs::selection) and the gather's M-blocks are its tile rows.
  // Empty (tiles 0) on the cuBLAS paths.
  GemmSelection gemm;
};

// The rule (reasons in ag_gemm_plan.cpp and src/ops/common/fused_rule.h). `decomposed_ok` = false: the
// decomposed path cannot run this call (FP8 per-row scales with M / W not a multiple of 4), the next best.
AgGemmImpl choose_ag_gemm_impl(int64_t m, int64_t n_per_rank, int64_t k, int world_size, bool shares_gpu,
                               std::string* reason, int sm_count = 132, DType dtype = DType::kBF16,
                               int gather_sms = 8, bool decomposed_ok = true, int64_t hbm_bytes_per_s = 0);
class AgGemmPlan {
 public:
  AgGemmPlan(Communicator& comm, const AgGemmDesc& desc, const AgGemmOptions& options = {});
  ~AgGemmPlan();
  AgGemmPlan(const AgGemmPlan&) = delete;
  AgGemmPlan& operator=(const AgGemmPlan&) = delete;

  AgGemmLayout layout(int64_t m, AgGemmImpl impl = AgGemmImpl::kAuto) const;
  // Validates args (InvalidArgument), then enqueues on `stream`; returns the gathered A [M, K] (valid
  // until the next run()).
  TensorRef run(const AgGemmArgs& args, cudaStream_t stream, AgGemmImpl impl = AgGemmImpl::kAuto);
  // FP8 with per-row scales: the gathered scale_a [1, M] of the last run() (same lifetime as its
  // gathered A). InvalidArgument for a plan without row scales or before the first run().
  TensorRef gathered_scale_a() const;
  // After the stream has been synchronized: throws TimeoutError if a wait on a peer expired.
  void check_status();
  void release();  // collective

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flux
