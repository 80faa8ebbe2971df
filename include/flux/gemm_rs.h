// flux/gemm_rs.h — fused GEMM + ReduceScatter (the row-parallel half of a tensor-parallel layer).
//
//   rank r of W:  A_r [M, K/W], B_r [N, K/W] (kNK) or [K/W, N] (kKN), bias [N] optional
//                 out_r [M/W, N] = rows r*M/W .. (r+1)*M/W of  sum_s A_s B_s^T  (+ bias, added once)
//
// M must be a multiple of W; M need not be a multiple of W x tile (tiles that straddle two ranks'
// rows are reduced by both; when a straddling tile cluster starts in a segment that a source's ring
// visits after the later segment it reaches into, that rank's reduction waits for it: correct, less
// overlap; tests/ops/test_gemm_rs_plan.cpp pins down exactly when).
// The W partials of an output element are summed in fp32 in a fixed rank order, so results are
// bitwise identical from run to run.
// FP8 (dtype kE4M3, B as [N, K/W] only): each rank's GEMM core takes e4m3 A and B with its own scales
// and writes its partial in out_dtype (bf16 / fp16, flux/gemm.h), which is reduced as above; the unfused
// paths run cuBLASLt FP8.
//
// Paths (GemmRsImpl), all behind the same plan and run():
//   kFused       the GEMM core computes this rank's partial C into symmetric memory in a rank-rotated
//                tile order (segment r+1 first, ring) and publishes each tile; a reduction kernel on
//                a few SMs beside it pulls the peers' tiles of this rank's rows as they are published,
//                in ring order, and accumulates them in fp32 (src/ops/gemm_rs/, reasons there);
//   kSequential  cuBLASLt GEMM, then a reduce-scatter: NCCL's when every rank has its own GPU,
//                Flux's pull-based one (the same reduction kernel, after the GEMM) when ranks share a GPU;
//   kDecomposed  the GEMM in column chunks on two streams, the reduce-scatter of chunk i overlapping the
//                GEMM of chunk i+1.
// kAuto picks the path the overlap model predicts fastest (choose_gemm_rs_impl; src/ops/common/fused_rule.h
// says what it is fed); FLUX_GEMM_RS_IMPL or
// GemmRsOptions::impl override it. W = 1 runs the GEMM core straight into out for every path.
//
// Collective: every rank builds the plan with the same description (checked on the values every rank
// resolved, knobs included: differing plans fail on every rank with the difference named) and calls
// run() in the same order. run() does not synchronize the host.
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

enum class GemmRsImpl : int32_t { kAuto = 0, kFused = 1, kSequential = 2, kDecomposed = 3 };
const char* to_string(GemmRsImpl impl);
GemmRsImpl parse_gemm_rs_impl(const std::string& text);  // auto, fused, sequential, decomposed

struct GemmRsDesc {
  int64_t max_m = 0;       // largest M run() will see (M varies per call)
  int64_t n = 0;
  int64_t k_per_rank = 0;  // K / W
  DType dtype = DType::kBF16;  // A and B: bf16, fp16 or e4m3
  WeightLayout layout = WeightLayout::kNK;
  DType out_dtype = DType::kBF16;      // e4m3 only: partials, out and bias (bf16 or fp16); else dtype
  ScaleKind scale = ScaleKind::kNone;  // e4m3 only: kPerTensor or kPerRowCol
};

struct GemmRsOptions {
  GemmRsImpl impl = GemmRsImpl::kAuto;  // kAuto: FLUX_GEMM_RS_IMPL, then the rule
  int32_t reduce_sms = 0;               // fused: SMs of the reduction kernel; 0 = FLUX_GEMM_RS_REDUCE_SMS
  int32_t col_bands = 0;                // fused: N bands of the tile order; 0 = auto (B band + accumulator in L2)
  int32_t decomposed_chunks = 0;        // decomposed: column chunks; 0 = 4
  GemmOptions gemm;                     // GEMM core options (config, wait timeout, ...)
  uint32_t initial_epoch = 1;           // the first call's epoch (tests start near 2^32 to cross the wrap)
};

struct GemmRsArgs {
  TensorRef a;              // [M, K/W]
  TensorRef b;              // [N, K/W] or [K/W, N]
  TensorRef bias;           // [N] as 1 x N, or data == nullptr
  TensorRef out;            // [M/W, N]
  // e4m3 only (fp32, this rank's): per tensor [1, 1] each; per row / column scale_a [1, M] (rows of this
  // rank's A) and scale_b [1, N]. Each rank's partial is scaled by its own scales before the sum.
  TensorRef scale_a;
  TensorRef scale_b;
};

// What run() does for an M (CPU-testable planning, exposed for tests and tools).
struct GemmRsLayout {
  GemmRsImpl impl = GemmRsImpl::kFused;
  std::string reason;
  int64_t m = 0, segment_rows = 0;
  GemmSelection gemm;        // the core's config for the partial GEMM
  TileOrderSpec order;       // rank-rotated order of this rank
  int32_t reduce_sms = 0;
  int32_t col_bands = 1;
  int32_t shots = 0;         // GEMM+AR's fused paths: 1 one-shot, 2 two-shot or rs_ag (GEMM+RS: 0)
  bool gather_after = false;  // GEMM+AR rs_ag: the all-gather runs after the fused GEMM+RS has joined
};

// The rule: W = 1 is the GEMM alone; otherwise the path the overlap model predicts fastest for this
// per-rank shape on a device of `sm_count` SMs with `reduce_sms` for the reduction (src/ops/common/
// fused_rule.h: the GEMM core's predicted times, the pull kernel's measured rate, NVLink 4's figures).
// `hbm_bytes_per_s`: the device's (DeviceLimits::hbm_bytes_per_s), which picks the GEMM heuristic's rate table;
// 0: its default table (the H200's).
GemmRsImpl choose_gemm_rs_impl(int64_t m, int64_t n, int64_t k_per_rank, int world_size, std::string* reason,
                               int sm_count = 132, DType dtype = DType::kBF16, int reduce_sms = 8,
                               int64_t hbm_bytes_per_s = 0);

class GemmRsPlan {
 public:
  GemmRsPlan(Communicator& comm, const GemmRsDesc& desc, const GemmRsOptions& options = {});
  ~GemmRsPlan();
  GemmRsPlan(const GemmRsPlan&) = delete;
  GemmRsPlan& operator=(const GemmRsPlan&) = delete;

  GemmRsLayout layout(int64_t m, GemmRsImpl impl = GemmRsImpl::kAuto) const;
  // Validates args (InvalidArgument), then enqueues on `stream`. `impl` kAuto = the plan's choice.
  void run(const GemmRsArgs& args, cudaStream_t stream, GemmRsImpl impl = GemmRsImpl::kAuto);
  // After the stream has been synchronized: throws TimeoutError if a wait on a peer expired.
  void check_status();
  // Collective: frees the symmetric workspace (also done, locally only, by the destructor).
  void release();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flux
