// src/ops/ag_gemm/ag_gemm.cpp — AG+GEMM: the plan (validation, workspace) and the four paths.
//
// Workspace (for max_m): a symmetric gather buffer G [max_m, K] (rank r's shard sits at rows
// r * M/W of its own G, where the peers read it; FP8 with per-row scales: followed, 128-byte aligned, by
// the fp32 row scales [max_m], rank r's at rows r * M/W, which travel with the rows), local M-block flags
// and part counters for the GEMM
// core's wait-before-load, and the shared op runtime (src/ops/common/op_runtime.h) whose signals hold,
// per rank, one "shard ready" flag per source rank (pushed by the source into every consumer's memory,
// so every consumer polls its own).
//
// Every call (W > 1) starts with the op runtime's protocol: fail-stop check, ordering after the previous
// call, the device barrier (no peer still reads my G from the last call), which advances the per-call
// epoch e on the device and refreshes the block flags to e - 1. Then my shard into my G (a local copy)
// and my ready flag = e on every rank (a small kernel), then by path:
//   fused        gather kernel (gather_sms CTAs): peers' shards into G in ring order, M-block flags
//                released (= e) as blocks complete; then the GEMM core (gemm_sms SMs, local shard first,
//                waits on each block's flag for e, read from the device) as the gather's programmatic
//                dependent on the same stream (it starts only once every gather CTA is resident).
//   fused_ce     the same with the copy engine: per peer shard, a wait kernel on its ready flag,
//                cudaMemcpyAsync, then a kernel releasing the blocks that shard completes (one GPU per
//                rank; the GEMM leaves one SM for these one-CTA kernels).
//   sequential   NCCL all-gather (one GPU per rank) or the gather kernel, then cuBLASLt.
//   decomposed   per shard (ring order): wait for its ready flag, copy it, one cuBLASLt GEMM for its
//                rows of out, alternating between the stream and the side stream (one cuBLAS workspace
//                per stream).
// Every path is CUDA-graph safe: no per-call host value reaches a kernel or a stream operation.
#include <nccl.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "flux/ag_gemm.h"
#include "flux/baseline/cublas_gemm.h"
#include "flux/knobs.h"
#include "src/common/check.h"
#include "src/common/nccl_check.h"
#include "src/device/block_gather.h"
#include "src/ops/ag_gemm/ag_gemm_plan.h"
#include "src/ops/common/flag_sizing.h"
#include "src/ops/common/op_runtime.h"
#include "src/ops/common/op_types.h"
#include "src/ops/common/path_table.h"
#include "src/ops/common/sm_budget.h"

namespace flux {

namespace {

constexpr size_t kMaxCachedLayouts = 4096;  // distinct (M, path) layouts kept per plan

}  // namespace

struct AgGemmPlan::Impl {
  Communicator* comm = nullptr;
  AgGemmDesc desc;
  ops::OpTypes types;  // A, B in `in` (gathered in it); out, bias in `out`
  AgGemmOptions opt;
  int world = 1, rank = 0, ranks_on_gpu = 1;
  DeviceLimits limits;
  AgGemmImpl forced = AgGemmImpl::kAuto;
  int32_t gather_sms = 8;
  std::unique_ptr<ops::OpRuntime> rt;
  std::unique_ptr<GemmPlan> full_gemm;   // W = 1
  std::unique_ptr<GemmPlan> fused_gemm;  // the SMs the gather leaves (or the rank's share)
  std::unique_ptr<GemmPlan> ce_gemm;     // fused_ce: the rank's SMs but one
  std::unique_ptr<SymmetricBuffer> gathered;
  uint32_t* block_flags = nullptr;  // [max blocks] local
  uint32_t* block_parts = nullptr;  // [max blocks] local
  int64_t max_blocks = 0;
  int64_t scale_offset = -1;  // FP8 per-row: byte offset of the row scales in G (-1: none)
  TensorRef last_scale_a;     // FP8 per-row: the last run()'s gathered scale_a
  // (m, bias, stream slot) -> cuBLAS plan on that slot's workspace.
  std::map<std::tuple<int64_t, bool, int>, std::unique_ptr<CublasGemm>> cublas;
  std::mutex layouts_mu;
  std::map<std::pair<int64_t, int>, AgGemmLayout> layouts;  // layout(): (M, requested path) -> layout

  ~Impl() {
    if (block_flags) cudaFree(block_flags);
    if (block_parts) cudaFree(block_parts);
  }

  char* g_rows(int owner, int64_t row) const {
    return static_cast<char*>(gathered->peer(owner)) + row * desc.k * int64_t(types.in_bytes());
  }
  float* g_scales(int owner, int64_t row) const {  // FP8 per-row only
    return reinterpret_cast<float*>(static_cast<char*>(gathered->peer(owner)) + scale_offset) + row;
  }
  // Copies rows [row, row + rows) of rank `owner`'s G (and their scales) into this rank's G.
  void copy_rows_from(int owner, int64_t row, int64_t rows, cudaStream_t st) const {
    FLUX_CUDA_CHECK(cudaMemcpyAsync(g_rows(rank, row), g_rows(owner, row), size_t(rows) * size_t(desc.k) * types.in_bytes(),
                                    cudaMemcpyDeviceToDevice, st));
    if (scale_offset >= 0) {
      FLUX_CUDA_CHECK(cudaMemcpyAsync(g_scales(rank, row), g_scales(owner, row), size_t(rows) * sizeof(float),
                                      cudaMemcpyDeviceToDevice, st));
    }
  }

  CublasGemm& cublas_for(int64_t m, bool bias, int slot) {
    auto key = std::make_tuple(m, bias, slot);
    auto it = cublas.find(key);
    if (it != cublas.end()) return *it->second;
    auto made = std::make_unique<CublasGemm>(types.core(desc.n_per_rank, desc.k), m, bias, 1, 0, 0, &rt->cublas(slot));
    CublasGemm& ref = *made;
    cublas.emplace(key, std::move(made));
    return ref;
  }

  device::AgGatherParams gather_params(const AgGemmLayout& L, int block_rows) const {
    device::AgGatherParams p;
    rt->set_ring(p, L.m, L.shard_rows, rank, world);
    p.k = desc.k;
    p.block_rows = block_rows;
    p.num_blocks = static_cast<int32_t>((L.m + block_rows - 1) / block_rows);
    FLUX_CHECK(p.num_blocks <= max_blocks, "flux ag_gemm: ", p.num_blocks, " M-blocks of ", block_rows, " rows at M = ", L.m,
               " but the plan holds ", max_blocks, " block flags");
    p.elem_bytes = static_cast<int32_t>(types.in_bytes());
    p.buffers = gathered->device_peers();
    p.scale_offset = scale_offset;
    p.ready = rt->signals().local();
    p.all_ready_first = comm->shares_gpu() ? 1 : 0;  // peers' kernels on this GPU: no waiting GEMM before they ran
    p.flags = block_flags;
    p.parts = block_parts;
    return p;
  }

  GemmArgs core_args(const AgGemmArgs& args, int64_t m) const {
    GemmArgs g;
    g.m = m;
    g.a = gathered->local();
    g.b = args.b.data;
    g.bias = args.bias.data;
    g.c = args.out.mutable_data();
    g.scale_a = scale_offset >= 0 ? g_scales(rank, 0) : static_cast<const float*>(args.scale_a.data);
    g.scale_b = static_cast<const float*>(args.scale_b.data);
    return g;
  }

  GemmArgs waiting_core_args(const AgGemmArgs& args, const AgGemmLayout& L) const {
    GemmArgs g = core_args(args, L.m);
    g.wait.flags = block_flags;
    g.wait.value_ptr = rt->epoch();
    g.wait.fault = rt->fault();  // a timeout poisons every rank
    g.order = &L.order;
    g.selection = &L.gemm;  // decided once: the GEMM's M-blocks are the gather's blocks
    return g;
  }

  // The gather, then the GEMM as its programmatic dependent on the same stream: the GEMM cannot start
  // before every gather CTA has started, so the kernel it waits on is always resident, whatever else
  // holds SMs (another op's kernels, NCCL, another process); if the runtime does not overlap them the
  // GEMM starts after the gather, which is slower but still right. Reasons: docs/NOTES.md, co-residency.
  void run_fused(const AgGemmLayout& L, const AgGemmArgs& args, cudaStream_t stream) {
    device::AgGatherParams gp = gather_params(L, L.gemm.config.tile_m);
    FLUX_CUDA_CHECK(cudaMemsetAsync(block_parts, 0, sizeof(uint32_t) * size_t(gp.num_blocks), stream));
    device::launch_ag_gather(gp, L.gather_sms, stream);
    GemmArgs g = waiting_core_args(args, L);
    g.after_resident_helper = true;  // (waiting_core_args passes L.gemm: the blocks above are its tile rows)
    fused_gemm->run(g, stream);
  }

  void run_fused_ce(const AgGemmLayout& L, const AgGemmArgs& args, cudaStream_t stream) {
    device::AgGatherParams gp = gather_params(L, L.gemm.config.tile_m);
    const int64_t shard = L.shard_rows;
    rt->fork(stream);
    for (int t = 0; t < world; ++t) {
      const int s = (rank + t) % world;
      if (t > 0) {
        rt->signals().wait_epoch_on_stream(s, s, rt->side());
        copy_rows_from(s, s * shard, shard, rt->side());
      }
      device::launch_ag_release_blocks(gp, t, rt->side());  // the blocks ring step t completes
    }
    ce_gemm->run(waiting_core_args(args, L), stream);
    rt->join(stream);
  }

  void run_sequential(const AgGemmLayout& L, const AgGemmArgs& args, cudaStream_t stream) {
    if (comm->nccl_available()) {  // FP8 moves as bytes (ncclUint8), its row scales as fp32
      FLUX_NCCL_CALL(*comm, ncclGroupStart());
      FLUX_NCCL_CALL(*comm, ncclAllGather(args.a_shard.data, gathered->local(), size_t(L.shard_rows) * size_t(desc.k),
                                          detail::nccl_data_type(types.in), comm->nccl(), stream));
      if (scale_offset >= 0) {
        FLUX_NCCL_CALL(*comm, ncclAllGather(args.scale_a.data, g_scales(rank, 0), size_t(L.shard_rows), ncclFloat32,
                                            comm->nccl(), stream));
      }
      FLUX_NCCL_CALL(*comm, ncclGroupEnd());
    } else {
      device::AgGatherParams gp = gather_params(L, 128);
      FLUX_CUDA_CHECK(cudaMemsetAsync(block_parts, 0, sizeof(uint32_t) * size_t(gp.num_blocks), stream));
      device::launch_ag_gather(gp, L.gather_sms, stream);
    }
    cublas_for(L.m, args.bias.data != nullptr, 0).run(core_args(args, L.m), stream);
  }

  void run_decomposed(const AgGemmLayout& L, const AgGemmArgs& args, cudaStream_t stream) {
    const int64_t shard = L.shard_rows;
    const size_t out_row_bytes = size_t(desc.n_per_rank) * types.out_bytes();
    rt->fork(stream);
    for (int t = 0; t < world; ++t) {
      const int s = (rank + t) % world;
      const int slot = t % 2;
      cudaStream_t st = slot == 0 ? stream : rt->side();
      if (t > 0) {
        rt->signals().wait_epoch_on_stream(s, s, st);
        copy_rows_from(s, s * shard, shard, st);
      }
      GemmArgs g = core_args(args, shard);
      g.a = g_rows(rank, s * shard);
      if (scale_offset >= 0) g.scale_a = g_scales(rank, s * shard);
      g.c = static_cast<char*>(args.out.mutable_data()) + size_t(s * shard) * out_row_bytes;
      cublas_for(shard, args.bias.data != nullptr, slot).run(g, st);
    }
    rt->join(stream);
  }
};

AgGemmPlan::AgGemmPlan(Communicator& comm, const AgGemmDesc& desc, const AgGemmOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& p = *impl_;
  p.comm = &comm;
  p.desc = desc;
  p.opt = options;
  p.world = comm.world_size();
  p.rank = comm.rank();
  FLUX_CHECK_ARG(comm.device() >= 0, "flux ag_gemm: the communicator has no GPU");
  p.types = ops::resolve_op_types("flux ag_gemm", desc.dtype, desc.layout, desc.out_dtype, desc.scale, desc.n_per_rank, desc.k);
  FLUX_CHECK_ARG(desc.max_m >= p.world && desc.max_m % p.world == 0, "flux ag_gemm: max_m = ", desc.max_m,
                 " (expected a positive multiple of the world size ", p.world, ")");
  p.forced = options.impl != AgGemmImpl::kAuto ? options.impl : parse_ag_gemm_impl(knobs::get_string("FLUX_AG_GEMM_IMPL"));
  p.gather_sms = options.gather_sms > 0 ? options.gather_sms : static_cast<int32_t>(knobs::get_int("FLUX_AG_GEMM_GATHER_SMS"));
  p.limits = query_device_limits(comm.device());
  FLUX_CHECK_ARG(p.gather_sms >= 1 && p.gather_sms <= p.limits.sm_count / 2, "flux ag_gemm: gather_sms ", p.gather_sms,
                 " (expected 1..", p.limits.sm_count / 2, " on this ", p.limits.sm_count, "-SM device)");
  p.ranks_on_gpu = ops::ranks_on_gpu(comm.device_uuids(), p.rank);
  GemmOptions go = options.gemm;
  go.rank = p.rank;
  go.device = comm.device();
  // Stream-K's fixup waits for CTAs of its own grid: with other ranks' spinning kernels on this GPU they might
  // never become resident. One GPU per rank keeps it (every kernel beside the GEMM finishes on its own).
  if (comm.shares_gpu()) go.stream_k = StreamKMode::kOff;
  const GemmDesc core = p.types.core(desc.n_per_rank, desc.k);
  go.max_sms = 0;
  p.full_gemm = std::make_unique<GemmPlan>(core, go);
  int gemm_sms = 0, gather = 0;
  if (p.world > 1) {
    const ops::SmSplit split = ops::fused_sm_split(p.limits.sm_count, p.ranks_on_gpu, p.gather_sms);
    gemm_sms = split.gemm_sms;
    gather = split.helper_sms;
    go.max_sms = gemm_sms;
    p.fused_gemm = std::make_unique<GemmPlan>(core, go);
    go.max_sms = ops::ag_gemm_ce_gemm_sms(p.limits.sm_count, comm.shares_gpu(), gemm_sms, gather);
    p.ce_gemm = std::make_unique<GemmPlan>(core, go);
  }
  // Compare what every rank resolved (knobs included); a difference fails on every rank, named.
  comm.check_same("ag_gemm plan",
                  detail::cat("W=", p.world, " max_m=", desc.max_m, " n_per_rank=", desc.n_per_rank, " k=", desc.k, " ",
                              p.types.describe(), " impl=", to_string(p.forced),
                              " gather_sms=", p.gather_sms, " split=", gemm_sms, "+", gather, " initial_epoch=",
                              options.initial_epoch, " gemm: ", p.full_gemm->resolved_options(),
                              p.fused_gemm ? " fused gemm: " + p.fused_gemm->resolved_options() : std::string(),
                              p.ce_gemm ? " ce gemm: " + p.ce_gemm->resolved_options() : std::string()));
  if (p.world > 1) {
    p.rt = std::make_unique<ops::OpRuntime>(comm, "ag_gemm", ops::OpRuntimeOptions{p.world, options.initial_epoch});
    size_t g_bytes = size_t(desc.max_m) * size_t(desc.k) * p.types.in_bytes();
    if (p.types.row_scales()) {
      // 128-byte aligned (a cache line), so no line of scales spans two M-blocks (>= 64 rows, 256 bytes):
      // the GEMM's epilogue never reads a block's scales through a line cached before they arrived.
      g_bytes = (g_bytes + 127) / 128 * 128;
      p.scale_offset = static_cast<int64_t>(g_bytes);
      g_bytes += size_t(desc.max_m) * sizeof(float);
    }
    p.gathered = std::make_unique<SymmetricBuffer>(comm, g_bytes, "ag_gemm gathered A");
    p.max_blocks = std::max<int64_t>(ops::max_block_flags(desc.max_m), (desc.max_m + 127) / 128);  // configs; fused_ce's 128
    FLUX_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p.block_flags), sizeof(uint32_t) * size_t(p.max_blocks)));
    FLUX_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p.block_parts), sizeof(uint32_t) * size_t(p.max_blocks)));
  }
}

AgGemmPlan::~AgGemmPlan() = default;

AgGemmLayout AgGemmPlan::layout(int64_t m, AgGemmImpl impl) const {
  Impl& p = *impl_;
  // Planned once per (M, requested path) and kept (the rule runs the GEMM heuristic three times).
  const std::pair<int64_t, int> key{m, int(impl)};
  std::lock_guard<std::mutex> lock(p.layouts_mu);
  auto it = p.layouts.find(key);
  if (it != p.layouts.end()) return it->second;
  if (p.layouts.size() >= kMaxCachedLayouts) p.layouts.clear();
  AgGemmLayout L = ops::plan_ag_gemm(m, p.desc, p.world, p.rank, p.comm->shares_gpu(), p.ranks_on_gpu,
                                     p.limits, p.gather_sms, impl != AgGemmImpl::kAuto ? impl : p.forced);
  if (p.world == 1) {
    L.gemm = p.full_gemm->select(m);
  } else if (L.impl == AgGemmImpl::kFused) {
    L.gemm = p.fused_gemm->select(m);
  } else if (L.impl == AgGemmImpl::kFusedCopyEngine) {
    L.gemm = p.ce_gemm->select(m);
  }
  p.layouts.emplace(key, L);
  return L;
}

TensorRef AgGemmPlan::run(const AgGemmArgs& args, cudaStream_t stream, AgGemmImpl impl) {
  Impl& p = *impl_;
  const char* op = "flux ag_gemm";
  const int64_t shard = args.a_shard.rows, m = shard * p.world;
  FLUX_CHECK_ARG(shard >= 1 && m <= p.desc.max_m, op, ": A shard has ", shard, " rows, M = W x rows = ", m,
                 " (expected 1 <= M <= max_m = ", p.desc.max_m, ")");
  check_tensor(op, "A shard", args.a_shard, shard, p.desc.k, p.types.in);
  if (p.desc.layout == WeightLayout::kNK) {
    check_tensor(op, "B", args.b, p.desc.n_per_rank, p.desc.k, p.types.in);
  } else {
    check_tensor(op, "B", args.b, p.desc.k, p.desc.n_per_rank, p.types.in);
  }
  check_tensor(op, "out", args.out, m, p.desc.n_per_rank, p.types.out);
  if (args.bias.data) check_tensor(op, "bias", args.bias, 1, p.desc.n_per_rank, p.types.out);
  ops::check_op_scales(op, p.types, args.scale_a, shard, args.scale_b, p.desc.n_per_rank);
  p.comm->check_fault();  // fail-stop: nothing runs on a communicator that has failed
  if (p.world == 1) {
    GemmArgs g;
    g.m = m;
    g.a = args.a_shard.data;
    g.b = args.b.data;
    g.bias = args.bias.data;
    g.c = args.out.mutable_data();
    g.scale_a = static_cast<const float*>(args.scale_a.data);
    g.scale_b = static_cast<const float*>(args.scale_b.data);
    p.full_gemm->run(g, stream);
    if (p.types.row_scales()) p.last_scale_a = args.scale_a;  // one rank: its rows are all of A
    return args.a_shard;
  }
  const AgGemmLayout L = layout(m, impl);  // refuses a path this call cannot take (ag_gemm_path_supported)
  // No peer still reads my gather buffer from the last call; my block flags are refreshed.
  const FlagRange refresh{p.block_flags, p.max_blocks};
  p.rt->begin(stream, &refresh, 1);
  const bool nccl_gather = L.impl == AgGemmImpl::kSequential && p.comm->nccl_available();
  if (!nccl_gather) {
    FLUX_CUDA_CHECK(cudaMemcpyAsync(p.g_rows(p.rank, p.rank * shard), args.a_shard.data,
                                    size_t(args.a_shard.bytes()), cudaMemcpyDeviceToDevice, stream));
    if (p.scale_offset >= 0) {
      FLUX_CUDA_CHECK(cudaMemcpyAsync(p.g_scales(p.rank, p.rank * shard), args.scale_a.data, size_t(shard) * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream));
    }
    p.rt->signals().set_epoch_on_stream(p.rank, stream);  // my shard is in place: ready[rank] = e everywhere
  }
  using Run = void (Impl::*)(const AgGemmLayout&, const AgGemmArgs&, cudaStream_t);
  static constexpr ops::PathRun<AgGemmImpl, Run> kRuns[] = {{AgGemmImpl::kFused, &Impl::run_fused},
                                                            {AgGemmImpl::kFusedCopyEngine, &Impl::run_fused_ce},
                                                            {AgGemmImpl::kSequential, &Impl::run_sequential},
                                                            {AgGemmImpl::kDecomposed, &Impl::run_decomposed}};
  ops::run_path(kRuns, L.impl, "flux ag_gemm", p, L, args, stream);
  p.rt->end(stream);
  if (p.scale_offset >= 0) p.last_scale_a = TensorRef(p.g_scales(p.rank, 0), 1, m, DType::kFP32);
  return TensorRef(p.gathered->local(), m, p.desc.k, p.types.in);
}

TensorRef AgGemmPlan::gathered_scale_a() const {
  const Impl& p = *impl_;
  FLUX_CHECK_ARG(p.types.row_scales(), "flux ag_gemm: gathered_scale_a() on a plan with ", p.types.describe(),
                 " (expected an e4m3 plan with per-row-col scales)");
  FLUX_CHECK_ARG(p.last_scale_a.data != nullptr, "flux ag_gemm: gathered_scale_a() before the first run()");
  return p.last_scale_a;
}

void AgGemmPlan::check_status() {
  Impl& p = *impl_;
  p.comm->sync_fault();  // the communicator's first failure, device record included
  p.full_gemm->check_status();
  if (p.fused_gemm) p.fused_gemm->check_status();
  if (p.ce_gemm) p.ce_gemm->check_status();
}

void AgGemmPlan::release() {
  Impl& p = *impl_;
  if (p.world == 1) return;
  FLUX_CUDA_CHECK(cudaDeviceSynchronize());
  p.rt->release();
  p.gathered->release();
}

}  // namespace flux
