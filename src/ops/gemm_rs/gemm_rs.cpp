// src/ops/gemm_rs/gemm_rs.cpp — GEMM+RS: the plan (validation, workspace) and the three paths.
//
// Workspace (allocated once, for max_m): a symmetric partial buffer P [max_m, n] (this rank's
// partial C, read by the peers), symmetric tile flags (epoch-valued), a local fp32 accumulator
// [max_m / W, n], and the shared op runtime (src/ops/common/op_runtime.h: signals, side stream, cuBLAS
// workspaces made at plan build).
//
// Every call (W > 1) starts with the op runtime's protocol: fail-stop check, ordering after the previous
// call, then the device barrier, which advances the per-call epoch e on the device and refreshes every
// tile flag of this rank to e - 1 (so a rank may overwrite P only when every peer has finished reading
// it in the previous call, and no flag lags by more than a call). Every kernel reads e from the device:
// the GEMM publishes tiles with value_ptr = epoch, the reductions wait for it. Then, by path:
//   fused       GEMM core (SMs - reduce_sms, rank-rotated order, tiles published) on the stream, the
//               reduction (reduce_sms CTAs) on the side stream forked from it; the stream joins it.
//   sequential  cuBLAS GEMM, then NCCL reduce-scatter (distinct GPUs) or flags + the reduction kernel
//               on all SMs (ranks sharing a GPU).
//   decomposed  C column chunks: GEMM of chunk c on the stream, its reduce-scatter on the side stream
//               while the stream computes chunk c+1.
// Every path is CUDA-graph safe: no per-call host value reaches a kernel or a stream operation.
#include <nccl.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "flux/baseline/cublas_gemm.h"
#include "flux/gemm_rs.h"
#include "flux/knobs.h"
#include "src/common/check.h"
#include "src/common/nccl_check.h"
#include "src/ops/common/flag_sizing.h"
#include "src/ops/common/op_runtime.h"
#include "src/ops/common/sm_budget.h"
#include "src/ops/gemm_rs/gemm_rs_plan.h"
#include "src/ops/gemm_rs/gemm_rs_reduce.h"

namespace flux {

namespace {

constexpr int kSequentialTile = 128;  // tile grid of the unfused paths' flags
constexpr int kMaxChunks = 64;


}  // namespace

struct GemmRsPlan::Impl {
  Communicator* comm = nullptr;
  GemmRsDesc desc;
  GemmRsOptions opt;
  int world = 1, rank = 0;
  DeviceLimits limits;
  GemmRsImpl forced = GemmRsImpl::kAuto;
  int32_t reduce_sms = 8;
  int32_t chunks = 4;
  std::unique_ptr<ops::OpRuntime> rt;
  std::unique_ptr<GemmPlan> fused_gemm;  // on the SMs the reduction leaves
  std::unique_ptr<GemmPlan> full_gemm;   // all SMs: W = 1
  std::unique_ptr<SymmetricBuffer> partial, flags;
  float* acc = nullptr;
  int64_t flag_count = 0;
  std::vector<cudaEvent_t> chunk_done;
  // (m, n chunk, bias, stream slot) -> cuBLAS plan on that slot's workspace (made on first use: host
  // work only, so also while a stream is being captured).
  std::map<std::tuple<int64_t, int64_t, bool, int>, std::unique_ptr<CublasGemm>> cublas;

  ~Impl() {
    for (cudaEvent_t e : chunk_done) cudaEventDestroy(e);
    if (acc) cudaFree(acc);
  }

  uint32_t* my_flags() const { return static_cast<uint32_t*>(flags->local()); }
  void* my_partial() const { return partial->local(); }

  CublasGemm& cublas_for(int64_t m, int64_t n_chunk, bool bias, int slot) {
    auto key = std::make_tuple(m, n_chunk, bias, slot);
    auto it = cublas.find(key);
    if (it != cublas.end()) return *it->second;
    GemmDesc d{n_chunk, desc.k_per_rank, desc.dtype, desc.layout};
    int64_t ldb = desc.layout == WeightLayout::kKN ? desc.n : 0;  // a column block of B [K, N]
    auto made = std::make_unique<CublasGemm>(d, m, bias, 1, ldb, 0, &rt->cublas(slot));
    CublasGemm& ref = *made;
    cublas.emplace(key, std::move(made));
    return ref;
  }

  ops::RsReduceParams reduce_params(int64_t m, const GemmRsArgs& args) const {
    ops::RsReduceParams p;
    p.m = m;
    p.n = desc.n;
    p.segment_rows = m / world;
    p.rank = rank;
    p.world = world;
    p.partials = partial->device_peers();
    p.flags = reinterpret_cast<uint32_t* const*>(flags->device_peers());
    p.epoch = rt->epoch();
    p.acc = acc;
    p.out = args.out.mutable_data();
    p.bias = args.bias.data;
    p.ctx = rt->wait_context(-1);
    return p;
  }

  void run_fused(const GemmRsLayout& L, const GemmRsArgs& args, cudaStream_t stream) {
    const int64_t m = L.m;
    FLUX_CHECK(L.gemm.tiles_m * L.gemm.tiles_n <= flag_count, "flux gemm_rs: config ", L.gemm.config.name, " has ",
               L.gemm.tiles_m, " x ", L.gemm.tiles_n, " tiles at M = ", m, " but the plan holds ", flag_count, " flags");
    rt->fork(stream);
    GemmArgs g;
    g.m = m;
    g.a = args.a.data;
    g.b = args.b.data;
    g.c = my_partial();
    g.publish.mode = PublishMode::kTileFlag;
    g.publish.flags = my_flags();
    g.publish.value_ptr = rt->epoch();
    g.order = &L.order;
    fused_gemm->run(g, stream);
    ops::RsReduceParams p = reduce_params(m, args);
    p.tile_m = L.gemm.config.tile_m;
    p.tile_n = L.gemm.config.tile_n;
    p.tiles_m = static_cast<int32_t>(L.gemm.tiles_m);
    p.tiles_n = static_cast<int32_t>(L.gemm.tiles_n);
    p.cluster_n = L.gemm.config.cluster_n;
    p.units_n = static_cast<int32_t>((L.gemm.tiles_n + p.cluster_n - 1) / p.cluster_n);
    p.col_bands = L.col_bands;
    p.band_begin = 0;
    p.band_end = L.col_bands;
    ops::launch_gemm_rs_reduce(desc.dtype, p, L.reduce_sms, rt->side());
    rt->join(stream);
  }

  // Flags for a [m, n_chunk] block at flag_offset on the 128 x n_chunk grid, then its reduction.
  void flux_reduce_block(int64_t m, int64_t col0, int64_t n_chunk, int64_t partial_offset, int64_t flag_offset,
                         int32_t tile_n, const GemmRsArgs& args, int ctas, cudaStream_t stream) {
    ops::RsReduceParams p = reduce_params(m, args);
    p.n = n_chunk;
    p.tile_m = kSequentialTile;
    p.tile_n = tile_n;
    p.tiles_m = static_cast<int32_t>((m + kSequentialTile - 1) / kSequentialTile);
    p.tiles_n = static_cast<int32_t>((n_chunk + tile_n - 1) / tile_n);
    p.cluster_n = 1;
    p.units_n = p.tiles_n;
    p.col_bands = 1;
    p.partial_offset = partial_offset;
    p.flag_offset = flag_offset;
    p.out = static_cast<char*>(args.out.mutable_data()) + col0 * int64_t(dtype_size(desc.dtype));
    p.out_ld = desc.n;
    p.bias = args.bias.data ? static_cast<const char*>(args.bias.data) + col0 * int64_t(dtype_size(desc.dtype)) : nullptr;
    ops::launch_gemm_rs_reduce(desc.dtype, p, ctas, stream);
  }

  void run_sequential(const GemmRsLayout& L, const GemmRsArgs& args, cudaStream_t stream) {
    const int64_t m = L.m;
    const bool nccl = comm->nccl_available();
    // Bias is added once: by rank 0's GEMM before NCCL sums the partials, or by the reduction.
    const bool bias_in_gemm = nccl && rank == 0 && args.bias.data != nullptr;
    GemmArgs g;
    g.m = m;
    g.a = args.a.data;
    g.b = args.b.data;
    g.bias = bias_in_gemm ? args.bias.data : nullptr;
    g.c = my_partial();
    cublas_for(m, desc.n, bias_in_gemm, 0).run(g, stream);
    if (nccl) {
      FLUX_NCCL_CALL(*comm, ncclReduceScatter(my_partial(), args.out.mutable_data(), size_t(m / world) * size_t(desc.n),
                                              detail::nccl_type(desc.dtype), ncclSum, comm->nccl(), stream));
      return;
    }
    const int64_t tiles = ((m + kSequentialTile - 1) / kSequentialTile) * ((desc.n + kSequentialTile - 1) / kSequentialTile);
    ops::launch_fill_flags(my_flags(), tiles, rt->epoch(), stream);
    // Alone on its GPU the reduction may take every SM; when ranks share a GPU each takes its helper
    // share (reduce_sms), or W ranks' spinning reductions would fill every SM and starve a peer's GEMM
    // (measured: W = 8 on one H200 stalled until the wait timeout).
    const int ctas = comm->shares_gpu() ? reduce_sms : limits.sm_count;
    flux_reduce_block(m, 0, desc.n, 0, 0, kSequentialTile, args, ctas, stream);
  }

  void run_decomposed(const GemmRsLayout& L, const GemmRsArgs& args, cudaStream_t stream) {
    const int64_t m = L.m, seg = m / world;
    const bool nccl = comm->nccl_available();
    const size_t es = dtype_size(desc.dtype);
    const int c_count = static_cast<int>(std::min<int64_t>(chunks, desc.n / 8));
    std::vector<int64_t> col(static_cast<size_t>(c_count + 1));
    for (int c = 0; c <= c_count; ++c) col[c] = (int64_t(c) * (desc.n / 8) / c_count) * 8;
    rt->fork(stream);
    int64_t partial_offset = 0, flag_offset = 0;
    for (int c = 0; c < c_count; ++c) {
      const int64_t nc = col[c + 1] - col[c];
      const bool bias_in_gemm = nccl && rank == 0 && args.bias.data != nullptr;
      GemmArgs g;
      g.m = m;
      g.a = args.a.data;
      g.b = desc.layout == WeightLayout::kNK ? static_cast<const char*>(args.b.data) + col[c] * desc.k_per_rank * int64_t(es)
                                             : static_cast<const char*>(args.b.data) + col[c] * int64_t(es);
      g.bias = bias_in_gemm ? static_cast<const char*>(args.bias.data) + col[c] * int64_t(es) : nullptr;
      // Chunk c is a packed [m, nc] block of P (the reduce-scatter needs it contiguous).
      g.c = static_cast<char*>(my_partial()) + partial_offset * int64_t(es);
      cublas_for(m, nc, bias_in_gemm, 0).run(g, stream);
      const int64_t chunk_flags = (m + kSequentialTile - 1) / kSequentialTile;
      if (!nccl) ops::launch_fill_flags(my_flags() + flag_offset, chunk_flags, rt->epoch(), stream);
      FLUX_CUDA_CHECK(cudaEventRecord(chunk_done[c], stream));
      FLUX_CUDA_CHECK(cudaStreamWaitEvent(rt->side(), chunk_done[c], 0));
      if (nccl) {
        // Receive into the accumulator's memory (seg x nc elements of dtype fit), then place the columns.
        FLUX_NCCL_CALL(*comm, ncclReduceScatter(g.c, acc, size_t(seg) * size_t(nc), detail::nccl_type(desc.dtype), ncclSum,
                                                comm->nccl(), rt->side()));
        FLUX_CUDA_CHECK(cudaMemcpy2DAsync(static_cast<char*>(args.out.mutable_data()) + col[c] * int64_t(es),
                                          size_t(desc.n) * es, acc, size_t(nc) * es, size_t(nc) * es, size_t(seg),
                                          cudaMemcpyDeviceToDevice, rt->side()));
      } else {
        flux_reduce_block(m, col[c], nc, partial_offset, flag_offset, static_cast<int32_t>(nc), args, reduce_sms,
                          rt->side());
      }
      partial_offset += m * nc;
      flag_offset += chunk_flags;
    }
    rt->join(stream);
  }
};

GemmRsPlan::GemmRsPlan(Communicator& comm, const GemmRsDesc& desc, const GemmRsOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& p = *impl_;
  p.comm = &comm;
  p.desc = desc;
  p.opt = options;
  p.world = comm.world_size();
  p.rank = comm.rank();
  FLUX_CHECK_ARG(comm.device() >= 0, "flux gemm_rs: the communicator has no GPU");
  validate_gemm_desc(GemmDesc{desc.n, desc.k_per_rank, desc.dtype, desc.layout});
  FLUX_CHECK_ARG(desc.max_m >= p.world && desc.max_m % p.world == 0, "flux gemm_rs: max_m = ", desc.max_m,
                 " (expected a positive multiple of the world size ", p.world, ")");
  p.forced = options.impl != GemmRsImpl::kAuto ? options.impl : parse_gemm_rs_impl(knobs::get_string("FLUX_GEMM_RS_IMPL"));
  p.reduce_sms = options.reduce_sms > 0 ? options.reduce_sms : static_cast<int32_t>(knobs::get_int("FLUX_GEMM_RS_REDUCE_SMS"));
  const int64_t bands = options.col_bands > 0 ? options.col_bands : knobs::get_int("FLUX_GEMM_RS_COL_BANDS");
  FLUX_CHECK_ARG(bands >= 0 && bands <= kMaxColBands, "flux gemm_rs: column bands ", bands, " (expected 0..", kMaxColBands, ")");
  p.opt.col_bands = static_cast<int32_t>(bands);
  p.chunks = options.decomposed_chunks > 0 ? options.decomposed_chunks : 4;
  FLUX_CHECK_ARG(p.chunks <= kMaxChunks, "flux gemm_rs: decomposed_chunks ", p.chunks, " (expected 1..", kMaxChunks, ")");

  p.limits = query_device_limits(comm.device());
  FLUX_CHECK_ARG(p.reduce_sms >= 1 && p.reduce_sms <= p.limits.sm_count / 2, "flux gemm_rs: reduce_sms ", p.reduce_sms,
                 " (expected 1..", p.limits.sm_count / 2, " on this ", p.limits.sm_count, "-SM device)");
  GemmOptions gemm_options = options.gemm;
  gemm_options.rank = p.rank;
  gemm_options.device = comm.device();
  gemm_options.max_sms = 0;
  GemmDesc core{desc.n, desc.k_per_rank, desc.dtype, desc.layout};
  p.full_gemm = std::make_unique<GemmPlan>(core, gemm_options);
  if (p.world > 1) {
    // One SM-budget policy for every fused op (src/ops/common/sm_budget.h): ranks sharing a GPU split it.
    const ops::SmSplit split =
        ops::fused_sm_split(p.limits.sm_count, ops::ranks_on_gpu(comm.device_uuids(), p.rank), p.reduce_sms);
    p.reduce_sms = split.helper_sms;
    gemm_options.max_sms = split.gemm_sms;
    p.fused_gemm = std::make_unique<GemmPlan>(core, gemm_options);
  }
  // Plans that differ across ranks would compute garbage or hang: compare what every rank resolved
  // (shapes, path, SM split, bands, chunks and the GEMM core's config / order / timeout, knobs
  // included) and fail on every rank, naming the difference.
  comm.check_same("gemm_rs plan",
                  detail::cat("W=", p.world, " max_m=", desc.max_m, " n=", desc.n, " k_per_rank=", desc.k_per_rank, " ",
                              to_string(desc.dtype), " ", to_string(desc.layout), " impl=", to_string(p.forced),
                              " reduce_sms=", p.reduce_sms, " col_bands=", p.opt.col_bands, " chunks=", p.chunks,
                              " initial_epoch=", options.initial_epoch, " gemm: ", p.full_gemm->resolved_options(),
                              p.fused_gemm ? " fused gemm: " + p.fused_gemm->resolved_options() : std::string()));
  if (p.world > 1) {
    p.rt = std::make_unique<ops::OpRuntime>(comm, "gemm_rs", ops::OpRuntimeOptions{1, options.initial_epoch});
    const size_t es = dtype_size(desc.dtype);
    p.partial = std::make_unique<SymmetricBuffer>(comm, size_t(desc.max_m) * size_t(desc.n) * es, "gemm_rs partial");
    // Enough flags for the finest grids: any compiled config's tile grid, the unfused paths' 128 x n_chunk.
    p.flag_count = std::max(ops::max_tile_flags(desc.max_m, desc.n), ((desc.max_m + 127) / 128) * kMaxChunks);
    p.flags = std::make_unique<SymmetricBuffer>(comm, size_t(p.flag_count) * sizeof(uint32_t), "gemm_rs flags");
    FLUX_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p.acc), size_t(desc.max_m / p.world) * size_t(desc.n) * sizeof(float)));
    p.chunk_done.resize(kMaxChunks);
    for (cudaEvent_t& e : p.chunk_done) FLUX_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
}

GemmRsPlan::~GemmRsPlan() = default;

GemmRsLayout GemmRsPlan::layout(int64_t m, GemmRsImpl impl) const {
  const Impl& p = *impl_;
  GemmRsImpl forced = impl != GemmRsImpl::kAuto ? impl : p.forced;
  const GemmPlan& gemm = p.world > 1 ? *p.fused_gemm : *p.full_gemm;
  FLUX_CHECK_ARG(m >= 1 && m <= p.desc.max_m, "flux gemm_rs: M = ", m, " (expected 1 <= M <= max_m = ", p.desc.max_m, ")");
  return ops::plan_gemm_rs(m, p.desc, p.world, p.rank, gemm.select(m), p.limits.l2_bytes, p.reduce_sms, p.opt.col_bands,
                           forced);
}

void GemmRsPlan::run(const GemmRsArgs& args, cudaStream_t stream, GemmRsImpl impl) {
  Impl& p = *impl_;
  const char* op = "flux gemm_rs";
  const int64_t m = args.a.rows;
  FLUX_CHECK_ARG(m >= 1 && m <= p.desc.max_m, op, ": A has ", m, " rows (expected 1..max_m = ", p.desc.max_m, ")");
  FLUX_CHECK_ARG(m % p.world == 0, op, ": M = ", m, " is not a multiple of the world size ", p.world,
                 " (each rank gets M / W rows; pad M to a multiple of W)");
  check_tensor(op, "A", args.a, m, p.desc.k_per_rank, p.desc.dtype);
  if (p.desc.layout == WeightLayout::kNK) {
    check_tensor(op, "B", args.b, p.desc.n, p.desc.k_per_rank, p.desc.dtype);
  } else {
    check_tensor(op, "B", args.b, p.desc.k_per_rank, p.desc.n, p.desc.dtype);
  }
  check_tensor(op, "out", args.out, m / p.world, p.desc.n, p.desc.dtype);
  if (args.bias.data) check_tensor(op, "bias", args.bias, 1, p.desc.n, p.desc.dtype);

  p.comm->check_fault();  // fail-stop: nothing runs on a communicator that has failed
  if (p.world == 1) {
    GemmArgs g;
    g.m = m;
    g.a = args.a.data;
    g.b = args.b.data;
    g.bias = args.bias.data;
    g.c = args.out.mutable_data();
    p.full_gemm->run(g, stream);
    return;
  }
  const GemmRsLayout L = layout(m, impl);
  // Every peer is done reading my partial buffer and flags of the last call; my flags are refreshed.
  const FlagRange refresh{p.my_flags(), p.flag_count};
  p.rt->begin(stream, &refresh, 1);
  switch (L.impl) {
    case GemmRsImpl::kFused: p.run_fused(L, args, stream); break;
    case GemmRsImpl::kSequential: p.run_sequential(L, args, stream); break;
    case GemmRsImpl::kDecomposed: p.run_decomposed(L, args, stream); break;
    default: FLUX_CHECK(false, "unresolved gemm_rs path");
  }
  p.rt->end(stream);
}

void GemmRsPlan::check_status() {
  Impl& p = *impl_;
  p.comm->sync_fault();  // the communicator's first failure, device record included
  p.full_gemm->check_status();
  if (p.fused_gemm) p.fused_gemm->check_status();
}

void GemmRsPlan::release() {
  Impl& p = *impl_;
  if (p.world == 1) return;
  FLUX_CUDA_CHECK(cudaDeviceSynchronize());
  p.rt->release();
  p.flags->release();
  p.partial->release();
}

}  // namespace flux
