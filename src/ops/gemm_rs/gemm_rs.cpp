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
// GEMM+AR runs the same paths over every row (one-shot = fused with one segment of M rows and every rank
// summing all of them), plus two-shot: fused as GEMM+RS over segments of ceil(M / W) rows, the sum into
// a symmetric buffer R, one "segment reduced" flag, and a gather of every rank's segment from R.
// Every path is CUDA-graph safe: no per-call host value reaches a kernel or a stream operation.
#include <nccl.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "flux/baseline/cublas_gemm.h"
#include "flux/gemm_ar.h"
#include "flux/gemm_rs.h"
#include "flux/knobs.h"
#include "src/common/check.h"
#include "src/common/nccl_check.h"
#include "src/ops/common/flag_sizing.h"
#include "src/device/tile_reduce.h"
#include "src/ops/common/op_runtime.h"
#include "src/ops/common/op_types.h"
#include "src/ops/common/path_table.h"
#include "src/ops/common/sm_budget.h"
#include "src/ops/gemm_rs/gemm_rs_plan.h"

namespace flux {

namespace {

constexpr int kSequentialTile = 128;  // tile grid of the unfused paths' flags
constexpr int kMaxChunks = 64;
constexpr size_t kMaxCachedLayouts = 4096;  // distinct (M, path) layouts kept per plan


}  // namespace

namespace ops {

// The machinery GEMM+RS and GEMM+AR share: a partial GEMM into symmetric memory with tiles published,
// and a pull-based fp32 reduction of the W partials. `all` = false: rank r reduces its M/W rows (sources
// in ring order from r-1); `all` = true: every rank reduces every row, sources in the order W-1, ..., 0
// (the reduction kernel's rank-0 walk), so every rank's out is the same bits.
struct TileReduceCore {
  bool all = false;
  const char* name = "flux gemm_rs";
  Communicator* comm = nullptr;
  GemmRsDesc desc;
  OpTypes types;  // A, B in `in`; partials, out, bias in `out` (FP8: e4m3 -> bf16 / fp16 with scales)
  GemmRsOptions opt;
  int world = 1, rank = 0;
  DeviceLimits limits;
  GemmRsImpl forced = GemmRsImpl::kAuto;
  GemmArPath ar_forced = GemmArPath::kAuto;  // all: the path from options or FLUX_GEMM_AR_PATH
  int32_t reduce_sms = 8;
  int32_t chunks = 4;
  std::unique_ptr<ops::OpRuntime> rt;
  std::unique_ptr<GemmPlan> fused_gemm;  // on the SMs the reduction leaves
  std::unique_ptr<GemmPlan> full_gemm;   // all SMs: W = 1
  std::unique_ptr<SymmetricBuffer> partial, flags;
  std::unique_ptr<SymmetricBuffer> reduced;  // all: two-shot's reduced rows R [max_m, n]
  float* acc = nullptr;
  int64_t flag_count = 0;   // tile flags; all: one more after them, two-shot's "my segment is reduced"
  int64_t ready_flag = -1;  // all: its index
  std::vector<cudaEvent_t> chunk_done;
  // (m, n chunk, bias, stream slot) -> cuBLAS plan on that slot's workspace (made on first use: host
  // work only, so also while a stream is being captured).
  std::map<std::tuple<int64_t, int64_t, bool, int>, std::unique_ptr<CublasGemm>> cublas;
  mutable std::mutex layouts_mu;
  mutable std::map<std::pair<int64_t, int>, GemmRsLayout> layouts;  // plan(): (M, requested path) -> layout

  ~TileReduceCore() {
    for (cudaEvent_t e : chunk_done) cudaEventDestroy(e);
    if (acc) cudaFree(acc);
  }

  int64_t out_rows(int64_t m) const { return all ? m : m / world; }
  int64_t flag_words() const { return flag_count + (all ? 1 : 0); }  // the tile flags, and the ready flag
  uint32_t* my_flags() const { return static_cast<uint32_t*>(flags->local()); }
  void* my_partial() const { return partial->local(); }

  CublasGemm& cublas_for(int64_t m, int64_t n_chunk, bool bias, int slot) {
    auto key = std::make_tuple(m, n_chunk, bias, slot);
    auto it = cublas.find(key);
    if (it != cublas.end()) return *it->second;
    GemmDesc d = types.core(n_chunk, desc.k_per_rank);
    int64_t ldb = desc.layout == WeightLayout::kKN ? desc.n : 0;  // a column block of B [K, N]
    auto made = std::make_unique<CublasGemm>(d, m, bias, 1, ldb, 0, &rt->cublas(slot));
    CublasGemm& ref = *made;
    cublas.emplace(key, std::move(made));
    return ref;
  }

  device::RsReduceParams reduce_params(int64_t m, const GemmRsArgs& args) const {
    device::RsReduceParams p;
    rt->set_ring(p, m, out_rows(m), all ? 0 : rank, world);
    p.n = desc.n;
    p.partials = partial->device_peers();
    p.flags = reinterpret_cast<uint32_t* const*>(flags->device_peers());
    p.acc = acc;
    p.out = args.out.mutable_data();
    p.bias = args.bias.data;
    return p;
  }

  // The GEMM's inputs for all of A and B (scales included): the fused and sequential paths' GEMM.
  GemmArgs gemm_inputs(int64_t m, const GemmRsArgs& args) const {
    GemmArgs g;
    g.m = m;
    g.a = args.a.data;
    g.b = args.b.data;
    g.scale_a = static_cast<const float*>(args.scale_a.data);
    g.scale_b = static_cast<const float*>(args.scale_b.data);
    return g;
  }

  void run_fused(const GemmRsLayout& L, const GemmRsArgs& args, cudaStream_t stream) {
    const int64_t m = L.m;
    FLUX_CHECK(L.gemm.tiles_m * L.gemm.tiles_n <= flag_count, name, ": config ", L.gemm.config.name, " has ",
               L.gemm.tiles_m, " x ", L.gemm.tiles_n, " tiles at M = ", m, " but the plan holds ", flag_count, " flags");
    rt->fork(stream);
    GemmArgs g = gemm_inputs(m, args);
    g.c = my_partial();
    g.publish.mode = PublishMode::kTileFlag;
    g.publish.flags = my_flags();
    g.publish.value_ptr = rt->epoch();
    g.order = &L.order;
    g.selection = &L.gemm;  // decided once: the reduction below reads the same tile grid
    fused_gemm->run(g, stream);
    device::RsReduceParams p = reduce_params(m, args);
    const RowSegments segments{m, L.segment_rows};
    const size_t es = types.out_bytes();
    if (L.shots == 2) {  // the first shot: this rank's segment, summed into R at its own rows
      p.rank = rank;
      p.segment_rows = L.segment_rows;
      p.out = static_cast<char*>(reduced->local()) + segments.begin(rank) * desc.n * int64_t(es);
      p.out_ld = desc.n;
    }
    p.tile_m = L.gemm.config.tile_m;
    p.tile_n = L.gemm.config.tile_n;
    p.tiles_m = static_cast<int32_t>(L.gemm.tiles_m);
    p.tiles_n = static_cast<int32_t>(L.gemm.tiles_n);
    p.cluster_n = L.gemm.config.cluster_n;
    p.units_n = static_cast<int32_t>((L.gemm.tiles_n + p.cluster_n - 1) / p.cluster_n);
    p.col_bands = L.col_bands;
    p.band_begin = 0;
    p.band_end = L.col_bands;
    device::launch_gemm_rs_reduce(types.out, p, L.reduce_sms, rt->side());
    if (L.gather_after) {  // rs_ag: the reduce-scatter joins, then the all-gather of the reduced segments
      rt->join(stream);
      all_gather_reduced(L, args, stream);
      return;
    }
    if (L.shots == 2) {  // the second shot: raise "segment reduced", then gather every rank's segment
      launch_reduced_gather(L, args, rt->side());
    }
    rt->join(stream);
  }

  // Two-shot's second shot and rs_ag's all-gather without NCCL: raise "my segment is reduced", then copy
  // every rank's reduced segment (waiting for its flag) into out.
  void launch_reduced_gather(const GemmRsLayout& L, const GemmRsArgs& args, cudaStream_t s) {
    device::launch_fill_flags(my_flags() + ready_flag, 1, rt->epoch(), s);
    device::ArGatherParams q;
    rt->set_ring(q, L.m, L.segment_rows, rank, world);
    q.n = desc.n;
    q.elem_bytes = static_cast<int32_t>(types.out_bytes());
    q.reduced = reduced->device_peers();
    q.flags = reinterpret_cast<uint32_t* const*>(flags->device_peers());
    q.flag_index = ready_flag;
    q.out = args.out.mutable_data();
    device::launch_ar_gather(q, L.reduce_sms, s);
  }

  // rs_ag's all-gather, after the fused GEMM+RS joined: NCCL's with one GPU per rank (in place in R, whose
  // rank r segment starts at r ceil(M / W) rows: R holds W ceil(max_m / W) rows; then M rows to out, or
  // straight into out when W divides M), Flux's gather kernel on the stream when ranks share a GPU.
  void all_gather_reduced(const GemmRsLayout& L, const GemmRsArgs& args, cudaStream_t stream) {
    if (!comm->nccl_available()) {
      launch_reduced_gather(L, args, stream);
      return;
    }
    const int64_t m = L.m, seg = L.segment_rows;
    const size_t es = types.out_bytes(), count = size_t(seg) * size_t(desc.n);
    char* r_local = static_cast<char*>(reduced->local());
    const ncclDataType_t type = detail::nccl_data_type(types.out);
    if (m % world == 0) {
      FLUX_NCCL_CALL(*comm, ncclAllGather(r_local + int64_t(rank) * seg * desc.n * int64_t(es), args.out.mutable_data(),
                                          count, type, comm->nccl(), stream));
      return;
    }
    FLUX_NCCL_CALL(*comm, ncclAllGather(r_local + int64_t(rank) * seg * desc.n * int64_t(es), r_local, count, type,
                                        comm->nccl(), stream));
    FLUX_CUDA_CHECK(cudaMemcpyAsync(args.out.mutable_data(), r_local, size_t(m) * size_t(desc.n) * es,
                                    cudaMemcpyDeviceToDevice, stream));
  }

  // Flags for a [m, n_chunk] block at flag_offset on the 128 x n_chunk grid, then its reduction.
  void flux_reduce_block(int64_t m, int64_t col0, int64_t n_chunk, int64_t partial_offset, int64_t flag_offset,
                         int32_t tile_n, const GemmRsArgs& args, int ctas, cudaStream_t stream) {
    device::RsReduceParams p = reduce_params(m, args);
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
    p.out = static_cast<char*>(args.out.mutable_data()) + col0 * int64_t(types.out_bytes());
    p.out_ld = desc.n;
    p.bias = args.bias.data ? static_cast<const char*>(args.bias.data) + col0 * int64_t(types.out_bytes()) : nullptr;
    device::launch_gemm_rs_reduce(types.out, p, ctas, stream);
  }

  void run_sequential(const GemmRsLayout& L, const GemmRsArgs& args, cudaStream_t stream) {
    const int64_t m = L.m;
    const bool nccl = comm->nccl_available();
    // Bias is added once: by rank 0's GEMM before NCCL sums the partials, or by the reduction.
    const bool bias_in_gemm = nccl && rank == 0 && args.bias.data != nullptr;
    GemmArgs g = gemm_inputs(m, args);
    g.bias = bias_in_gemm ? args.bias.data : nullptr;
    g.c = my_partial();
    cublas_for(m, desc.n, bias_in_gemm, 0).run(g, stream);
    if (nccl && all) {
      FLUX_NCCL_CALL(*comm, ncclAllReduce(my_partial(), args.out.mutable_data(), size_t(m) * size_t(desc.n),
                                          detail::nccl_data_type(types.out), ncclSum, comm->nccl(), stream));
      return;
    }
    if (nccl) {
      FLUX_NCCL_CALL(*comm, ncclReduceScatter(my_partial(), args.out.mutable_data(), size_t(m / world) * size_t(desc.n),
                                              detail::nccl_data_type(types.out), ncclSum, comm->nccl(), stream));
      return;
    }
    const int64_t tiles = ((m + kSequentialTile - 1) / kSequentialTile) * ((desc.n + kSequentialTile - 1) / kSequentialTile);
    device::launch_fill_flags(my_flags(), tiles, rt->epoch(), stream);
    // Alone on its GPU the reduction may take every SM; when ranks share a GPU each takes its helper
    // share (reduce_sms), or W ranks' spinning reductions would fill every SM and starve a peer's GEMM
    // (measured: W = 8 on one H200 stalled until the wait timeout).
    const int ctas = comm->shares_gpu() ? reduce_sms : limits.sm_count;
    flux_reduce_block(m, 0, desc.n, 0, 0, kSequentialTile, args, ctas, stream);
  }

  void run_decomposed(const GemmRsLayout& L, const GemmRsArgs& args, cudaStream_t stream) {
    const int64_t m = L.m, seg = out_rows(m);
    const bool nccl = comm->nccl_available();
    const size_t es = types.out_bytes(), in_es = types.in_bytes();
    const int c_count = static_cast<int>(std::min<int64_t>(chunks, desc.n / 8));
    std::vector<int64_t> col(static_cast<size_t>(c_count + 1));
    for (int c = 0; c <= c_count; ++c) col[c] = (int64_t(c) * (desc.n / 8) / c_count) * 8;
    rt->fork(stream);
    int64_t partial_offset = 0, flag_offset = 0;
    for (int c = 0; c < c_count; ++c) {
      const int64_t nc = col[c + 1] - col[c];
      const bool bias_in_gemm = nccl && rank == 0 && args.bias.data != nullptr;
      GemmArgs g = gemm_inputs(m, args);
      g.b = desc.layout == WeightLayout::kNK ? static_cast<const char*>(args.b.data) + col[c] * desc.k_per_rank * int64_t(in_es)
                                             : static_cast<const char*>(args.b.data) + col[c] * int64_t(in_es);
      if (types.row_scales()) g.scale_b += col[c];  // the chunk's columns (col[c] is a multiple of 8: 32-byte aligned)
      g.bias = bias_in_gemm ? static_cast<const char*>(args.bias.data) + col[c] * int64_t(es) : nullptr;
      // Chunk c is a packed [m, nc] block of P (the reduce-scatter needs it contiguous).
      g.c = static_cast<char*>(my_partial()) + partial_offset * int64_t(es);
      cublas_for(m, nc, bias_in_gemm, 0).run(g, stream);
      const int64_t chunk_flags = (m + kSequentialTile - 1) / kSequentialTile;
      if (!nccl) device::launch_fill_flags(my_flags() + flag_offset, chunk_flags, rt->epoch(), stream);
      FLUX_CUDA_CHECK(cudaEventRecord(chunk_done[c], stream));
      FLUX_CUDA_CHECK(cudaStreamWaitEvent(rt->side(), chunk_done[c], 0));
      if (nccl) {
        // Receive into the accumulator's memory (seg x nc elements of dtype fit), then place the columns.
        if (all) {
          FLUX_NCCL_CALL(*comm, ncclAllReduce(g.c, acc, size_t(seg) * size_t(nc), detail::nccl_data_type(types.out), ncclSum,
                                              comm->nccl(), rt->side()));
        } else {
          FLUX_NCCL_CALL(*comm, ncclReduceScatter(g.c, acc, size_t(seg) * size_t(nc), detail::nccl_data_type(types.out),
                                                  ncclSum, comm->nccl(), rt->side()));
        }
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

  // Plan build (collective). `forced`: the path from options or the op's knob (kAuto: the rule).
  void init(Communicator& c, const GemmRsDesc& d, const GemmRsOptions& options, GemmRsImpl forced_path) {
    comm = &c;
    desc = d;
    opt = options;
    world = c.world_size();
    rank = c.rank();
    FLUX_CHECK_ARG(c.device() >= 0, name, ": the communicator has no GPU");
    types = resolve_op_types(name, d.dtype, d.layout, d.out_dtype, d.scale, d.n, d.k_per_rank);
    if (all) {
      FLUX_CHECK_ARG(d.max_m >= 1, name, ": max_m = ", d.max_m, " (expected >= 1)");
    } else {
      FLUX_CHECK_ARG(d.max_m >= world && d.max_m % world == 0, name, ": max_m = ", d.max_m,
                     " (expected a positive multiple of the world size ", world, ")");
    }
    forced = forced_path;
    reduce_sms = options.reduce_sms > 0 ? options.reduce_sms : static_cast<int32_t>(knobs::get_int("FLUX_GEMM_RS_REDUCE_SMS"));
    const int64_t bands = options.col_bands > 0 ? options.col_bands : knobs::get_int("FLUX_GEMM_RS_COL_BANDS");
    FLUX_CHECK_ARG(bands >= 0 && bands <= kMaxColBands, name, ": column bands ", bands, " (expected 0..", kMaxColBands, ")");
    opt.col_bands = static_cast<int32_t>(bands);
    chunks = options.decomposed_chunks > 0 ? options.decomposed_chunks : 4;
    FLUX_CHECK_ARG(chunks <= kMaxChunks, name, ": decomposed_chunks ", chunks, " (expected 1..", kMaxChunks, ")");

    limits = query_device_limits(c.device());
    FLUX_CHECK_ARG(reduce_sms >= 1 && reduce_sms <= limits.sm_count / 2, name, ": reduce_sms ", reduce_sms,
                   " (expected 1..", limits.sm_count / 2, " on this ", limits.sm_count, "-SM device)");
    GemmOptions gemm_options = options.gemm;
    gemm_options.rank = rank;
    gemm_options.device = c.device();
    // Stream-K's fixup waits for CTAs of its own grid: with other ranks' spinning kernels on this GPU they
    // might never become resident. One GPU per rank keeps it (every kernel beside the GEMM finishes on its own).
    if (c.shares_gpu()) gemm_options.stream_k = StreamKMode::kOff;
    gemm_options.max_sms = 0;
    const GemmDesc core = types.core(d.n, d.k_per_rank);
    full_gemm = std::make_unique<GemmPlan>(core, gemm_options);
    if (world > 1) {
      // One SM-budget policy for every fused op (src/ops/common/sm_budget.h): ranks sharing a GPU split it.
      const ops::SmSplit split = ops::fused_sm_split(limits.sm_count, ops::ranks_on_gpu(c.device_uuids(), rank), reduce_sms);
      reduce_sms = split.helper_sms;
      gemm_options.max_sms = split.gemm_sms;
      fused_gemm = std::make_unique<GemmPlan>(core, gemm_options);
    }
    // Plans that differ across ranks would compute garbage or hang: compare what every rank resolved
    // (shapes, path, SM split, bands, chunks and the GEMM core's config / order / timeout, knobs
    // included) and fail on every rank, naming the difference.
    c.check_same(std::string(name) + " plan",
                 detail::cat("W=", world, " max_m=", d.max_m, " n=", d.n, " k_per_rank=", d.k_per_rank, " ",
                             types.describe(), " impl=", to_string(forced),
                             all ? detail::cat(" ar_path=", to_string(ar_forced)) : std::string(),
                             " reduce_sms=", reduce_sms, " col_bands=", opt.col_bands, " chunks=", chunks,
                             " initial_epoch=", options.initial_epoch, " gemm: ", full_gemm->resolved_options(),
                             fused_gemm ? " fused gemm: " + fused_gemm->resolved_options() : std::string()));
    if (world > 1) {
      rt = std::make_unique<ops::OpRuntime>(c, all ? "gemm_ar" : "gemm_rs", ops::OpRuntimeOptions{1, options.initial_epoch});
      const size_t es = types.out_bytes();
      partial = std::make_unique<SymmetricBuffer>(c, size_t(d.max_m) * size_t(d.n) * es, std::string(name) + " partial");
      // Enough flags for the finest grids: any compiled config's tile grid, the unfused paths' 128 x n_chunk.
      flag_count = std::max(ops::max_tile_flags(d.max_m, d.n), ((d.max_m + 127) / 128) * kMaxChunks);
      if (all) {
        ready_flag = flag_count;
        // W ceil(max_m / W) rows: rs_ag's NCCL all-gather runs in place over W whole segments.
        const int64_t r_rows = (d.max_m + world - 1) / world * world;
        reduced = std::make_unique<SymmetricBuffer>(c, size_t(r_rows) * size_t(d.n) * es, std::string(name) + " reduced");
      }
      flags = std::make_unique<SymmetricBuffer>(c, size_t(flag_words()) * sizeof(uint32_t), std::string(name) + " flags");
      const int64_t acc_rows = all ? d.max_m : d.max_m / world;
      FLUX_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&acc), size_t(acc_rows) * size_t(d.n) * sizeof(float)));
      chunk_done.resize(kMaxChunks);
      for (cudaEvent_t& e : chunk_done) FLUX_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
  }

  // `impl` (GEMM+RS) or `ar_path` (GEMM+AR): this call's path; kAuto: the plan's forced path, then the rule.
  // Planned once per (M, requested path) and kept (the rule runs the GEMM heuristic three times).
  GemmRsLayout plan(int64_t m, GemmRsImpl impl, GemmArPath ar_path = GemmArPath::kAuto) const {
    const GemmPlan& gemm = world > 1 ? *fused_gemm : *full_gemm;
    FLUX_CHECK_ARG(m >= 1 && m <= desc.max_m, name, ": M = ", m, " (expected 1 <= M <= max_m = ", desc.max_m, ")");
    const std::pair<int64_t, int> key{m, all ? int(ar_path) : int(impl)};
    std::lock_guard<std::mutex> lock(layouts_mu);
    auto it = layouts.find(key);
    if (it != layouts.end()) return it->second;
    if (layouts.size() >= kMaxCachedLayouts) layouts.clear();
    GemmRsLayout L = all ? ops::plan_gemm_ar(m, desc, world, rank, gemm.select(m), limits, reduce_sms, opt.col_bands,
                                             ar_path != GemmArPath::kAuto ? ar_path : ar_forced)
                         : ops::plan_gemm_rs(m, desc, world, rank, gemm.select(m), limits, reduce_sms, opt.col_bands,
                                             impl != GemmRsImpl::kAuto ? impl : forced);
    layouts.emplace(key, L);
    return L;
  }

  void run(const GemmRsArgs& args, cudaStream_t stream, GemmRsImpl impl, GemmArPath ar_path = GemmArPath::kAuto) {
    const TensorRef &a = args.a, &b = args.b, &bias = args.bias, &out = args.out;
    const int64_t m = a.rows;
    ops::check_call_rows(name, m, desc.max_m, world, !all);  // M = A's rows
    check_tensor(name, "A", a, m, desc.k_per_rank, types.in);
    if (desc.layout == WeightLayout::kNK) {
      check_tensor(name, "B", b, desc.n, desc.k_per_rank, types.in);
    } else {
      check_tensor(name, "B", b, desc.k_per_rank, desc.n, types.in);
    }
    check_tensor(name, "out", out, out_rows(m), desc.n, types.out);
    if (bias.data) check_tensor(name, "bias", bias, 1, desc.n, types.out);
    check_op_scales(name, types, args.scale_a, m, args.scale_b, desc.n);

    comm->check_fault();  // fail-stop: nothing runs on a communicator that has failed
    if (world == 1) {
      GemmArgs g = gemm_inputs(m, args);
      g.bias = bias.data;
      g.c = out.mutable_data();
      full_gemm->run(g, stream);
      return;
    }
    const GemmRsLayout L = plan(m, impl, ar_path);
    // Every peer is done reading my partial (and reduced) buffer and flags of the last call; my flags
    // are refreshed.
    const FlagRange refresh{my_flags(), flag_words()};
    rt->begin(stream, &refresh, 1);
    // GEMM+AR's one_shot / two_shot / rs_ag are all kFused here, the layout saying which (shots, gather_after).
    using Run = void (TileReduceCore::*)(const GemmRsLayout&, const GemmRsArgs&, cudaStream_t);
    static constexpr ops::PathRun<GemmRsImpl, Run> kRuns[] = {{GemmRsImpl::kFused, &TileReduceCore::run_fused},
                                                              {GemmRsImpl::kSequential, &TileReduceCore::run_sequential},
                                                              {GemmRsImpl::kDecomposed, &TileReduceCore::run_decomposed}};
    ops::run_path(kRuns, L.impl, name, *this, L, args, stream);
    rt->end(stream);
  }

  void check_status() {
    comm->sync_fault();  // the communicator's first failure, device record included
    full_gemm->check_status();
    if (fused_gemm) fused_gemm->check_status();
  }

  void release() {
    if (world == 1) return;
    FLUX_CUDA_CHECK(cudaDeviceSynchronize());
    rt->release();
    flags->release();
    partial->release();
    if (reduced) reduced->release();
  }
};

}  // namespace ops

struct GemmRsPlan::Impl : ops::TileReduceCore {};

GemmRsPlan::GemmRsPlan(Communicator& comm, const GemmRsDesc& desc, const GemmRsOptions& options)
    : impl_(std::make_unique<Impl>()) {
  const GemmRsImpl forced =
      options.impl != GemmRsImpl::kAuto ? options.impl : parse_gemm_rs_impl(knobs::get_string("FLUX_GEMM_RS_IMPL"));
  impl_->init(comm, desc, options, forced);
}

GemmRsPlan::~GemmRsPlan() = default;

GemmRsLayout GemmRsPlan::layout(int64_t m, GemmRsImpl impl) const { return impl_->plan(m, impl); }

void GemmRsPlan::run(const GemmRsArgs& args, cudaStream_t stream, GemmRsImpl impl) {
  impl_->run(args, stream, impl);
}

void GemmRsPlan::check_status() { impl_->check_status(); }

void GemmRsPlan::release() { impl_->release(); }

// ---------------------------------------------------------------------------------------------------
// GEMM+AR: the same core, reducing every row on every rank.

struct GemmArPlan::Impl : ops::TileReduceCore {};

GemmArPlan::GemmArPlan(Communicator& comm, const GemmArDesc& desc, const GemmArOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->all = true;
  impl_->name = "flux gemm_ar";
  impl_->ar_forced =
      options.path != GemmArPath::kAuto ? options.path : parse_gemm_ar_path(knobs::get_string("FLUX_GEMM_AR_PATH"));
  GemmRsOptions o;
  o.reduce_sms = options.pull_sms;
  o.decomposed_chunks = options.decomposed_chunks;
  o.gemm = options.gemm;
  o.initial_epoch = options.initial_epoch;
  impl_->init(comm, GemmRsDesc{desc.max_m, desc.n, desc.k_per_rank, desc.dtype, desc.layout, desc.out_dtype, desc.scale}, o,
              GemmRsImpl::kAuto);
}

GemmArPlan::~GemmArPlan() = default;

GemmRsLayout GemmArPlan::layout(int64_t m, GemmArPath path) const { return impl_->plan(m, GemmRsImpl::kAuto, path); }

void GemmArPlan::run(const GemmArArgs& args, cudaStream_t stream, GemmArPath path) {
  impl_->run(GemmRsArgs{args.a, args.b, args.bias, args.out, args.scale_a, args.scale_b}, stream, GemmRsImpl::kAuto, path);
}

void GemmArPlan::check_status() { impl_->check_status(); }

void GemmArPlan::release() { impl_->release(); }

}  // namespace flux
