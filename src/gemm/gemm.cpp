// src/gemm/gemm.cpp — host planning for the GEMM core: validation, config choice, launch arguments.
// No CUTLASS here; kernels are reached through src/gemm/gemm_launch.h.
#include "flux/gemm.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "flux/error.h"
#include "flux/knobs.h"
#include "src/common/check.h"
#include "src/common/device_guard.h"
#include "src/gemm/gemm_config.h"
#include "src/gemm/gemm_launch.h"
#include "src/gemm/split_k_reduce.h"
#include "src/gemm/tune_cache.h"

namespace flux {

namespace {

constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

bool overlaps(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  auto a0 = reinterpret_cast<uintptr_t>(a), b0 = reinterpret_cast<uintptr_t>(b);
  return a0 < b0 + static_cast<uintptr_t>(b_bytes) && b0 < a0 + static_cast<uintptr_t>(a_bytes);
}

// Bytes of fp32 split-K partials a selection needs for M rows: [splits, M, N].
int64_t split_k_partial_bytes(const GemmSelection& sel, int64_t m, int64_t n) {
  return sel.splits > 1 ? int64_t(sel.splits) * m * n * int64_t(sizeof(float)) : 0;
}

StreamKMode parse_stream_k(const std::string& text) {
  if (text == "auto") return StreamKMode::kAuto;
  if (text == "off") return StreamKMode::kOff;
  if (text == "on") return StreamKMode::kOn;
  throw InvalidArgument(detail::cat("flux gemm: FLUX_GEMM_STREAM_K='", text, "' (expected auto, off or on)"));
}

const char* stream_k_name(StreamKMode mode) {
  return mode == StreamKMode::kOff ? "off" : mode == StreamKMode::kOn ? "on" : "auto";
}

bool is_valid_swizzle(int32_t s) { return s == 1 || s == 2 || s == 4 || s == 8 || s == 16; }

Raster parse_raster(const std::string& text) {
  if (text == "auto") return Raster::kAuto;
  if (text == "row") return Raster::kRowMajor;
  if (text == "col") return Raster::kColMajor;
  throw InvalidArgument(detail::cat("flux gemm: FLUX_GEMM_RASTER='", text, "' (expected auto, row or col)"));
}

int find_config(const std::string& name) {
  std::string names;
  for (const GemmConfigInfo& c : gemm_configs()) {
    if (name == c.name) return c.id;
    names += detail::cat(names.empty() ? "" : ", ", c.name);
  }
  throw InvalidArgument(detail::cat("flux gemm: unknown config '", name, "' (expected auto or one of: ", names, ")"));
}

}  // namespace

void validate_gemm_desc(const GemmDesc& desc) {
  FLUX_CHECK_ARG(desc.n >= 8 && desc.n <= kMaxDim, "flux gemm: N = ", desc.n, " is out of range (expected 8 <= N < 2^31)");
  FLUX_CHECK_ARG(desc.k >= 8 && desc.k <= kMaxDim, "flux gemm: K = ", desc.k, " is out of range (expected 8 <= K < 2^31)");
  FLUX_CHECK_ARG(desc.n % 8 == 0, "flux gemm: N = ", desc.n,
                 " is not a multiple of 8: rows of C (and of B as [K, N]) must be 16 bytes aligned for TMA "
                 "(N multiple of 8 for bf16/fp16)");
  FLUX_CHECK_ARG(desc.k % 8 == 0, "flux gemm: K = ", desc.k,
                 " is not a multiple of 8: rows of A (and of B as [N, K]) must be 16 bytes aligned for TMA "
                 "(K multiple of 8 for bf16/fp16)");
  FLUX_CHECK_ARG(desc.dtype == DType::kBF16 || desc.dtype == DType::kFP16 || desc.dtype == DType::kE4M3,
                 "flux gemm: dtype ", to_string(desc.dtype), " is not supported (expected bf16, fp16 or e4m3)");
  FLUX_CHECK_ARG(desc.layout == WeightLayout::kNK || desc.layout == WeightLayout::kKN, "flux gemm: weight layout ",
                 static_cast<int>(desc.layout), " is not supported (expected nk or kn)");
  if (desc.dtype != DType::kE4M3) {
    FLUX_CHECK_ARG(desc.scale == ScaleKind::kNone, "flux gemm: scale ", to_string(desc.scale), " with dtype ",
                   to_string(desc.dtype), " (scales are for e4m3 inputs; expected scale none)");
    return;
  }
  FLUX_CHECK_ARG(desc.scale == ScaleKind::kPerTensor || desc.scale == ScaleKind::kPerRowCol,
                 "flux gemm: e4m3 inputs need scales (GemmDesc::scale per-tensor or per-row-col; got ",
                 to_string(desc.scale), ")");
  FLUX_CHECK_ARG(desc.out_dtype == DType::kBF16 || desc.out_dtype == DType::kFP16, "flux gemm: e4m3 output dtype ",
                 to_string(desc.out_dtype), " (expected GemmDesc::out_dtype bf16 or fp16)");
  FLUX_CHECK_ARG(desc.layout == WeightLayout::kNK,
                 "flux gemm: e4m3 needs the weight as [N, K] (layout nk): Hopper's FP8 tensor-core MMA reads both "
                 "operands K-major, so a [K, N] weight would need a transposed copy (transpose it once, at load)");
  FLUX_CHECK_ARG(desc.k % 16 == 0, "flux gemm: K = ", desc.k,
                 " is not a multiple of 16: rows of A and B must be 16 bytes aligned for TMA (K multiple of 16 for e4m3)");
}

void validate_tile_order_spec(const TileOrderSpec& spec) {
  FLUX_CHECK_ARG(spec.segments >= 1 && spec.segments <= kMaxSegments, "flux gemm: tile order has ", spec.segments,
                 " segments (expected 1..", kMaxSegments, ")");
  FLUX_CHECK_ARG(spec.first_segment >= 0 && spec.first_segment < spec.segments, "flux gemm: tile order starts at segment ",
                 spec.first_segment, " (expected 0..", spec.segments - 1, ")");
  FLUX_CHECK_ARG(spec.segment_rows >= 0, "flux gemm: tile order has segment_rows ", spec.segment_rows,
                 " (expected >= 0; 0 means ceil(M / segments))");
  FLUX_CHECK_ARG(spec.raster == Raster::kAuto || spec.raster == Raster::kRowMajor || spec.raster == Raster::kColMajor,
                 "flux gemm: tile order raster ", static_cast<int>(spec.raster), " (expected kAuto, kRowMajor or kColMajor)");
  FLUX_CHECK_ARG(spec.swizzle == 0 || is_valid_swizzle(spec.swizzle), "flux gemm: tile order swizzle ", spec.swizzle,
                 " (expected 0 for auto, or 1, 2, 4, 8, 16)");
  FLUX_CHECK_ARG(spec.col_bands >= 1 && spec.col_bands <= kMaxColBands, "flux gemm: tile order has ", spec.col_bands,
                 " column bands (expected 1..", kMaxColBands, ")");
}

void validate_gemm_args(const GemmDesc& desc, const GemmArgs& args) {
  FLUX_CHECK_ARG(args.m >= 1 && args.m <= kMaxDim, "flux gemm: M = ", args.m, " is out of range (expected 1 <= M < 2^31)");
  FLUX_CHECK_ARG(args.a && args.b && args.c, "flux gemm: A, B and C must be non-null device pointers (got A=", args.a,
                 " B=", args.b, " C=", args.c, ")");
  FLUX_CHECK_ARG(aligned16(args.a), "flux gemm: A = ", args.a, " is not 16-byte aligned (TMA needs 16-byte aligned bases)");
  FLUX_CHECK_ARG(aligned16(args.b), "flux gemm: B = ", args.b, " is not 16-byte aligned (TMA needs 16-byte aligned bases)");
  FLUX_CHECK_ARG(aligned16(args.c), "flux gemm: C = ", args.c, " is not 16-byte aligned (TMA needs 16-byte aligned bases)");
  FLUX_CHECK_ARG(args.bias == nullptr || aligned16(args.bias), "flux gemm: bias = ", args.bias,
                 " is not 16-byte aligned (expected 16-byte aligned, or nullptr for no bias)");
  const int64_t es = static_cast<int64_t>(dtype_size(desc.dtype));                  // A, B
  const int64_t out_es = static_cast<int64_t>(dtype_size(gemm_out_dtype(desc)));   // C, bias
  const int64_t c_bytes = args.m * desc.n * out_es;
  FLUX_CHECK_ARG(!overlaps(args.c, c_bytes, args.a, args.m * desc.k * es), "flux gemm: C overlaps A (expected disjoint buffers)");
  FLUX_CHECK_ARG(!overlaps(args.c, c_bytes, args.b, desc.n * desc.k * es), "flux gemm: C overlaps B (expected disjoint buffers)");
  if (args.bias) {
    FLUX_CHECK_ARG(!overlaps(args.c, c_bytes, args.bias, desc.n * out_es), "flux gemm: C overlaps bias (expected disjoint buffers)");
  }
  if (desc.dtype != DType::kE4M3) {
    FLUX_CHECK_ARG(args.scale_a == nullptr && args.scale_b == nullptr, "flux gemm: scale_a / scale_b given for ",
                   to_string(desc.dtype), " inputs (scales are for e4m3; expected nullptr)");
  } else {
    const bool vectors = desc.scale == ScaleKind::kPerRowCol;
    FLUX_CHECK_ARG(args.scale_a != nullptr && args.scale_b != nullptr, "flux gemm: e4m3 needs scale_a and scale_b (",
                   vectors ? "fp32 [M] and [N]" : "one fp32 each", ", device memory; got scale_a=", args.scale_a,
                   " scale_b=", args.scale_b, ")");
    const uintptr_t align = vectors ? 15u : 3u;
    FLUX_CHECK_ARG((reinterpret_cast<uintptr_t>(args.scale_a) & align) == 0 &&
                       (reinterpret_cast<uintptr_t>(args.scale_b) & align) == 0,
                   "flux gemm: scale_a ", args.scale_a, " / scale_b ", args.scale_b, " are not ", align + 1,
                   "-byte aligned (expected ", vectors ? "16-byte aligned fp32 vectors" : "4-byte aligned fp32 values", ")");
    FLUX_CHECK_ARG(!overlaps(args.c, c_bytes, args.scale_a, (vectors ? args.m : 1) * 4) &&
                       !overlaps(args.c, c_bytes, args.scale_b, (vectors ? desc.n : 1) * 4),
                   "flux gemm: C overlaps scale_a or scale_b (expected disjoint buffers)");
  }
  FLUX_CHECK_ARG((reinterpret_cast<uintptr_t>(args.wait.flags) & 3u) == 0, "flux gemm: wait flags ", args.wait.flags,
                 " are not 4-byte aligned (expected uint32_t flags)");
  FLUX_CHECK_ARG((reinterpret_cast<uintptr_t>(args.wait.value_ptr) & 3u) == 0 &&
                     (reinterpret_cast<uintptr_t>(args.publish.value_ptr) & 3u) == 0,
                 "flux gemm: wait / publish value_ptr is not 4-byte aligned (expected a uint32_t device word)");
  FLUX_CHECK_ARG((reinterpret_cast<uintptr_t>(args.workspace) & 15u) == 0, "flux gemm: workspace ", args.workspace,
                 " is not 16-byte aligned (expected 16-byte aligned device memory, or nullptr)");
  FLUX_CHECK_ARG(args.workspace_bytes >= 0 && (args.workspace != nullptr || args.workspace_bytes == 0),
                 "flux gemm: workspace_bytes ", args.workspace_bytes, " with workspace ", args.workspace,
                 " (expected a size >= 0 with a buffer, or 0 without one)");
  FLUX_CHECK_ARG(args.publish.value_ptr == nullptr || args.publish.mode == PublishMode::kTileFlag,
                 "flux gemm: publish value_ptr is only used by PublishMode::kTileFlag");
  switch (args.publish.mode) {
    case PublishMode::kNone:
      FLUX_CHECK_ARG(args.publish.flags == nullptr, "flux gemm: publish flags given with PublishMode::kNone "
                     "(expected kTileFlag or kBlockCounter, or no flags)");
      break;
    case PublishMode::kTileFlag:
    case PublishMode::kBlockCounter:
      FLUX_CHECK_ARG(args.publish.flags != nullptr, "flux gemm: PublishMode ", static_cast<int>(args.publish.mode),
                     " needs publish flags (got nullptr)");
      FLUX_CHECK_ARG((reinterpret_cast<uintptr_t>(args.publish.flags) & 3u) == 0, "flux gemm: publish flags ",
                     args.publish.flags, " are not 4-byte aligned (expected uint32_t flags)");
      break;
    default:
      throw InvalidArgument(detail::cat("flux gemm: unknown PublishMode ", static_cast<int>(args.publish.mode),
                                        " (expected kNone, kTileFlag or kBlockCounter)"));
  }
}

void validate_gemm_selection(const GemmDesc& desc, int64_t m, const GemmSelection& sel) {
  const std::vector<GemmConfigInfo>& configs = gemm_configs();
  const int id = sel.config.id;
  FLUX_CHECK_ARG(id >= 0 && id < static_cast<int>(configs.size()), "flux gemm: selection config id ", id,
                 " (expected 0..", configs.size() - 1, ": a GemmSelection from GemmPlan::select)");
  const GemmConfigInfo& c = configs[id];
  FLUX_CHECK_ARG(sel.config.tile_m == c.tile_m && sel.config.tile_n == c.tile_n && sel.config.tile_k == c.tile_k &&
                     sel.config.cluster_m == c.cluster_m && sel.config.cluster_n == c.cluster_n &&
                     sel.config.swap_ab == c.swap_ab && sel.config.skinny == c.skinny,
                 "flux gemm: selection config ", id, " has tiles ", sel.config.tile_m, "x", sel.config.tile_n, "x",
                 sel.config.tile_k, " cluster ", sel.config.cluster_m, "x", sel.config.cluster_n, " (expected ", c.name,
                 "'s: a GemmSelection from GemmPlan::select, unmodified)");
  const int64_t tiles_m = (m + c.tile_m - 1) / c.tile_m, tiles_n = (desc.n + c.tile_n - 1) / c.tile_n;
  FLUX_CHECK_ARG(sel.tiles_m == tiles_m && sel.tiles_n == tiles_n, "flux gemm: selection has a ", sel.tiles_m, " x ",
                 sel.tiles_n, " tile grid (expected ", tiles_m, " x ", tiles_n, " for ", c.name, " at M = ", m,
                 ", N = ", desc.n, ": select(M) of the M this call runs)");
  FLUX_CHECK_ARG(sel.splits == 1 || (c.split_k && sel.splits >= 2 && sel.splits <= kMaxSplitK &&
                                     split_k_divides(desc.k, sel.splits, desc.dtype)),
                 "flux gemm: selection splits K = ", desc.k, " into ", sel.splits, " (expected 1, or for a split-K config 2..",
                 kMaxSplitK, " dividing K into multiples of 16 bytes; ", c.name, c.split_k ? " can" : " cannot", " split)");
  FLUX_CHECK_ARG(!sel.stream_k || (c.stream_k && sel.splits == 1), "flux gemm: selection asks for stream-K with ",
                 c.name, " split ", sel.splits, " (expected stream-K only on a config compiled with it, unsplit)");
  FLUX_CHECK_ARG((sel.raster == Raster::kRowMajor || sel.raster == Raster::kColMajor) && is_valid_swizzle(sel.swizzle),
                 "flux gemm: selection raster ", static_cast<int>(sel.raster), " swizzle ", sel.swizzle,
                 " (expected a resolved raster, row or col, and swizzle 1, 2, 4, 8 or 16)");
}

TileOrderMap make_tile_order_map(int64_t m, int64_t n, const GemmConfigInfo& config, const TileOrderSpec& spec) {
  validate_tile_order_spec(spec);
  FLUX_CHECK_ARG(spec.raster != Raster::kAuto && spec.swizzle != 0,
                 "flux gemm: make_tile_order_map needs a resolved raster and swizzle (got raster ",
                 static_cast<int>(spec.raster), ", swizzle ", spec.swizzle, ")");
  FLUX_CHECK_ARG(m >= 1 && n >= 1, "flux gemm: make_tile_order_map needs m, n >= 1 (got ", m, ", ", n, ")");
  return tile_order_map_unchecked(m, n, config.tile_m, config.tile_n, config.cluster_m, config.cluster_n, spec);
}

struct GemmPlan::Impl {
  GemmDesc desc;
  GemmOptions options;
  DeviceLimits limits;
  std::vector<gemm::KernelInfo> kernels;  // by config id
  std::vector<int> max_active_clusters;   // by config id
  std::vector<int> max_active_clusters_partial;  // by config id: the split-K kernels (0: not compiled)
  int32_t split_k = 0;                    // option, else knob FLUX_GEMM_SPLIT_K
  StreamKMode stream_k = StreamKMode::kAuto;  // option, else knob FLUX_GEMM_STREAM_K
  int forced_config = -1;                 // knob / option, -1 = heuristic
  Raster raster = Raster::kAuto;          // option, else knob
  int32_t swizzle = 0;                    // option, else knob
  uint64_t timeout_ns = 0;
  uint32_t chaos_seed = 0;                // knob FLUX_CHAOS_SEED
  std::string tune_path;                  // GemmOptions::tune_cache / knob FLUX_TUNE_CACHE ("" = none)
  gemm::TuneCache tune;
  DeviceStatus* status = nullptr;         // device memory, one record
  // Split-K / stream-K workspaces, one per stream the plan has run such a call on (so calls on different
  // streams never share one), each split_k_workspace_bound() bytes or what a forced split needed, and
  // counters: the split-K reduction's per-tile arrivals (when it publishes) or the stream-K fixup's flags;
  // both return to zero after every call (and check_status() zeroes them after a failed wait).
  struct Workspace {
    void* ptr = nullptr;
    int64_t bytes = 0;
    uint32_t* arrivals = nullptr;
    int64_t counters = 0;
  };
  std::mutex workspace_mu;
  std::map<cudaStream_t, Workspace> workspaces;
  std::mutex select_mu;
  std::map<int64_t, GemmSelection> select_cache;  // by M
  GemmSelection select_uncached(int64_t m) const;
  // The stream-K decomposition's workspace for a selection (its workers: the config's resident clusters).
  StreamKNeeds stream_k_needs_of(const GemmSelection& sel, int64_t m) const;
};

GemmPlan::GemmPlan(const GemmDesc& desc, const GemmOptions& options) : impl_(std::make_unique<Impl>()) {
  knobs::reject_retired();
  validate_gemm_desc(desc);
  validate_tile_order_spec(options.order);
  Impl& p = *impl_;
  p.desc = desc;
  p.options = options;

  std::string config = options.config.empty() ? knobs::get_string("FLUX_GEMM_CONFIG") : options.config;
  if (config != "auto") p.forced_config = find_config(config);
  p.raster = options.order.raster != Raster::kAuto ? options.order.raster : parse_raster(knobs::get_string("FLUX_GEMM_RASTER"));
  p.swizzle = options.order.swizzle;
  if (p.swizzle == 0) {
    int64_t s = knobs::get_int("FLUX_GEMM_SWIZZLE");
    FLUX_CHECK_ARG(s == 0 || is_valid_swizzle(static_cast<int32_t>(s)), "flux gemm: FLUX_GEMM_SWIZZLE=", s,
                   " (expected 0 for auto, or 1, 2, 4, 8, 16)");
    p.swizzle = static_cast<int32_t>(s);
  }
  if (options.wait_timeout_ns > 0) {
    p.timeout_ns = options.wait_timeout_ns;
  } else {
    int64_t ms = knobs::get_int("FLUX_WAIT_TIMEOUT_MS");
    FLUX_CHECK_ARG(ms > 0, "flux gemm: FLUX_WAIT_TIMEOUT_MS=", ms, " (expected a positive number of milliseconds)");
    p.timeout_ns = static_cast<uint64_t>(ms) * 1000000ull;
  }

  p.chaos_seed = static_cast<uint32_t>(knobs::get_int("FLUX_CHAOS_SEED"));
  {
    int64_t sk = options.split_k != 0 ? options.split_k : knobs::get_int("FLUX_GEMM_SPLIT_K");
    FLUX_CHECK_ARG(sk >= 0 && sk <= kMaxSplitK, "flux gemm: split-K ", sk,
                   " (GemmOptions::split_k / FLUX_GEMM_SPLIT_K; expected 0 = auto, 1 = off, or 2..", kMaxSplitK, ")");
    FLUX_CHECK_ARG(sk <= 1 || split_k_divides(desc.k, static_cast<int32_t>(sk), desc.dtype), "flux gemm: split-K ", sk,
                   " does not divide K = ", desc.k, " into slices of a multiple of 16 bytes (expected S with K % S == 0 ",
                   "and (K / S) a multiple of ", desc.dtype == DType::kE4M3 ? 16 : 8, ")");
    p.split_k = static_cast<int32_t>(sk);
    if (p.forced_config >= 0 && sk > 1) {
      FLUX_CHECK_ARG(gemm_configs()[p.forced_config].split_k, "flux gemm: config ", gemm_configs()[p.forced_config].name,
                     " cannot split K (split-K ", sk, " forced); configs that can: those with split_k in gemm_configs()");
    }
  }
  {
    p.stream_k = options.stream_k != StreamKMode::kKnob ? options.stream_k
                                                         : parse_stream_k(knobs::get_string("FLUX_GEMM_STREAM_K"));
    FLUX_CHECK_ARG(p.stream_k == StreamKMode::kAuto || p.stream_k == StreamKMode::kOff || p.stream_k == StreamKMode::kOn,
                   "flux gemm: GemmOptions::stream_k ", static_cast<int>(p.stream_k), " (expected kKnob, kAuto, kOff or kOn)");
  }
  p.limits = query_device_limits(options.device);
  p.tune_path = options.tune_cache.empty() ? knobs::get_string("FLUX_TUNE_CACHE") : options.tune_cache;
  if (p.tune_path == "none") p.tune_path.clear();
  if (!p.tune_path.empty()) {
    std::string warning;
    p.tune = gemm::TuneCache::load(p.tune_path, p.limits.name, p.limits.sm_count, &warning);
    if (!warning.empty()) {
      static std::mutex mu;
      static std::set<std::string> warned;  // one line per file and process
      std::lock_guard<std::mutex> lock(mu);
      if (warned.insert(p.tune_path).second) std::fprintf(stderr, "%s\n", warning.c_str());
    }
  }
  if (p.limits.cc_major != 9 || p.limits.cc_minor != 0) {
    throw Unsupported(detail::cat("flux gemm: device ", p.limits.device, " (", p.limits.name, ") is sm_", p.limits.cc_major,
                                  p.limits.cc_minor, "; the GEMM core is built for sm_90a (Hopper: H100, H200)"));
  }
  FLUX_CHECK_ARG(options.max_sms >= 0, "flux gemm: max_sms ", options.max_sms, " (expected >= 0; 0 = all SMs)");
  if (p.forced_config >= 0 && !gemm_config_compiled(gemm_configs()[p.forced_config], desc.dtype, desc.layout)) {
    throw Unsupported(detail::cat("flux gemm: config ", gemm_configs()[p.forced_config].name, " (forced) has no kernel for ",
                                  to_string(desc.dtype), " with weight layout ", to_string(desc.layout),
                                  " (the skinny configs read B as [N, K] only; cmake/FluxInstantiations.cmake lists "
                                  "the compiled kernels)"));
  }
  bool any_split = false;
  for (const GemmConfigInfo& c : gemm_configs()) {
    if (!gemm_config_compiled(c, desc.dtype, desc.layout)) {
      // Not compiled for this plan (a skinny config with a [K, N] weight): never a candidate.
      p.kernels.push_back(gemm::KernelInfo{});
      p.max_active_clusters.push_back(-1);
      p.max_active_clusters_partial.push_back(-1);
      continue;
    }
    gemm::KernelInfo info =
        gemm::prepare_kernel(gemm::kernel_key(desc, static_cast<gemm::ConfigId>(c.id), gemm::GemmOutput::kFinal),
                             p.limits.device);
    FLUX_CHECK(info.smem_bytes <= p.limits.smem_per_block_optin, "config ", c.name, " needs ", info.smem_bytes,
               " bytes of shared memory; the device allows ", p.limits.smem_per_block_optin);
    FLUX_CHECK(info.max_active_clusters > 0, "config ", c.name, " cannot be resident on device ", p.limits.device);
    int clusters = info.max_active_clusters;
    if (options.max_sms > 0) {
      int cluster_size = c.cluster_m * c.cluster_n;
      FLUX_CHECK_ARG(options.max_sms >= cluster_size, "flux gemm: max_sms ", options.max_sms,
                     " is less than one cluster of config ", c.name, " (", cluster_size, " SMs)");
      clusters = std::min(clusters, options.max_sms / cluster_size);
    }
    p.kernels.push_back(info);
    p.max_active_clusters.push_back(clusters);
    int partial_clusters = 0;
    if (c.split_k) {
      gemm::KernelInfo part = gemm::prepare_kernel(
          gemm::kernel_key(desc, static_cast<gemm::ConfigId>(c.id), gemm::GemmOutput::kPartial), p.limits.device);
      FLUX_CHECK(part.max_active_clusters > 0, "config ", c.name, " (split-K) cannot be resident on device ", p.limits.device);
      partial_clusters = part.max_active_clusters;
      if (options.max_sms > 0) partial_clusters = std::min(partial_clusters, options.max_sms / (c.cluster_m * c.cluster_n));
    }
    p.max_active_clusters_partial.push_back(partial_clusters);
    any_split = any_split || c.split_k;
  }
  // Loaded now, not at a first launch beside a waiting GEMM (split_k_reduce.h says why).
  if (any_split) gemm::prepare_split_k_reduce(p.limits.device);
  detail::DeviceGuard guard(p.limits.device);
  FLUX_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p.status), sizeof(DeviceStatus)));
  FLUX_CUDA_CHECK(cudaMemset(p.status, 0, sizeof(DeviceStatus)));
}

GemmPlan::~GemmPlan() {
  if (!impl_) return;
  if (impl_->status) (void)cudaFree(impl_->status);
  for (auto& [stream, buffer] : impl_->workspaces) {
    (void)cudaFree(buffer.ptr);
    (void)cudaFree(buffer.arrivals);
  }
}
GemmPlan::GemmPlan(GemmPlan&&) noexcept = default;
GemmPlan& GemmPlan::operator=(GemmPlan&&) noexcept = default;

const GemmDesc& GemmPlan::desc() const { return impl_->desc; }

std::string GemmPlan::resolved_options() const {
  const Impl& p = *impl_;
  return detail::cat("config=", p.forced_config >= 0 ? gemm_configs()[p.forced_config].name : "auto", " raster=",
                     p.raster == Raster::kAuto ? "auto" : (p.raster == Raster::kRowMajor ? "row" : "col"),
                     " swizzle=", p.swizzle, " max_sms=", p.options.max_sms, " wait_timeout_ns=", p.timeout_ns,
                     " chaos_seed=", p.chaos_seed, " split_k=", p.split_k, " stream_k=", stream_k_name(p.stream_k), " swap_ab=", p.options.allow_swap_ab ? 1 : 0,
                     " tune_cache=", p.tune.size() ? p.tune.digest() : std::string("none"));
}
const DeviceLimits& GemmPlan::device_limits() const { return impl_->limits; }
DeviceStatus* GemmPlan::device_status() const { return impl_->status; }

GemmSelection GemmPlan::select(int64_t m) const {
  Impl& p = *impl_;
  FLUX_CHECK_ARG(m >= 1 && m <= kMaxDim, "flux gemm: M = ", m, " is out of range (expected 1 <= M < 2^31)");
  // Selection is a pure function of M for a plan: computed once per M (it builds its reason text, a few
  // microseconds of host time that a decode-sized GEMM would otherwise pay on every call).
  {
    std::lock_guard<std::mutex> lock(p.select_mu);
    auto it = p.select_cache.find(m);
    if (it != p.select_cache.end()) return it->second;
  }
  GemmSelection sel = p.select_uncached(m);
  std::lock_guard<std::mutex> lock(p.select_mu);
  if (p.select_cache.size() >= 4096) p.select_cache.clear();
  p.select_cache.emplace(m, sel);
  return sel;
}

GemmSelection GemmPlan::Impl::select_uncached(int64_t m) const {
  const Impl& p = *this;
  // A forced skinny config takes the skinny tile order below, not the heuristic pick's, so the heuristic is asked
  // for an unsplit pick: a forced split would find no config that can split where the skinny configs are no candidate
  // (M above their tile's rows), as FP8 above M = 16 (its skinny config is its only split one).
  const bool forced_skinny = p.forced_config >= 0 && gemm_configs()[p.forced_config].skinny;
  GemmSelection sel = select_gemm_config(m, p.desc.n, p.desc.k, p.limits, p.max_active_clusters,
                                         forced_skinny ? std::min(p.split_k, 1) : p.split_k, p.options.allow_swap_ab,
                                         p.desc.dtype, p.stream_k);
  if (p.forced_config < 0 && p.split_k == 0 && p.tune.size() > 0) {
    gemm::TuneKey key{p.desc.dtype, p.desc.layout, p.desc.n, p.desc.k,
                      p.options.max_sms > 0 ? p.options.max_sms : p.limits.sm_count, gemm::TuneCache::m_bucket(m)};
    const gemm::TuneChoice* c = p.tune.find(key);
    const gemm::ConfigShape* shape = c != nullptr ? gemm::config_shape_by_name(c->config) : nullptr;
    const bool compiled = shape != nullptr && p.max_active_clusters[static_cast<int>(shape->id)] >= 0;
    if (c != nullptr && compiled && (p.options.allow_swap_ab || !shape->swap_ab) &&
        (!c->stream_k || p.stream_k != StreamKMode::kOff)) {
      gemm::apply_tune_choice(*c, m, p.desc.n, p.desc.k, p.tune_path, &sel, p.desc.dtype);
    }
  }
  if (p.forced_config >= 0) {
    // The forced config, split as forced (never split by the heuristic: a forced config is run as named;
    // stream-K only with FLUX_GEMM_STREAM_K=on, where its units leave a partial wave), with the heuristic's
    // raster rule.
    const GemmConfigInfo& forced = gemm_configs()[p.forced_config];
    const bool sk = p.stream_k == StreamKMode::kOn && forced.stream_k && p.split_k <= 1;
    sel.config = forced;
    sel.splits = std::max(p.split_k, 1);
    sel.stream_k = sk;
    sel.predicted_us = 0.0;
    sel.tiles_m = (m + sel.config.tile_m - 1) / sel.config.tile_m;
    sel.tiles_n = (p.desc.n + sel.config.tile_n - 1) / sel.config.tile_n;
    if (forced.skinny) {  // the heuristic's order for its skinny picks (gemm_config.cpp): row-major, no swizzle
      sel.raster = Raster::kRowMajor;
      sel.swizzle = 1;
    }
    sel.reason = detail::cat("forced config ", sel.config.name, " (FLUX_GEMM_CONFIG / GemmOptions::config), split-K ",
                             sel.splits, sk ? ", stream-K (FLUX_GEMM_STREAM_K=on)" : "", "; ", sel.reason);
  }
  if (p.raster != Raster::kAuto) {
    sel.raster = p.raster;
    sel.reason += "; raster forced";
  }
  if (p.swizzle != 0) {
    sel.swizzle = p.swizzle;
    sel.reason += "; swizzle forced";
  }
  if (sel.stream_k && p.stream_k_needs_of(sel, m).bytes == 0) {
    sel.stream_k = false;  // the units fill whole waves (or too few k-tiles): nothing to cut
    sel.reason += "; stream-K not needed (whole waves)";
  }
  return sel;
}

int64_t GemmPlan::workspace_bytes(int64_t m) const {
  const Impl& p = *impl_;
  const GemmSelection sel = select(m);
  if (sel.stream_k) return p.stream_k_needs_of(sel, m).bytes;
  return split_k_partial_bytes(sel, m, p.desc.n);
}

StreamKNeeds GemmPlan::Impl::stream_k_needs_of(const GemmSelection& sel, int64_t m) const {
  return stream_k_needs(sel, m, desc.n, desc.k, std::max(max_active_clusters[sel.config.id], 1));
}

void GemmPlan::run(const GemmArgs& args, cudaStream_t stream) const {
  Impl& p = *impl_;
  validate_gemm_args(p.desc, args);
  int current = -1;
  FLUX_CUDA_CHECK(cudaGetDevice(&current));
  FLUX_CHECK_ARG(current == p.limits.device, "flux gemm: run() on device ", current, " but the plan was built for device ",
                 p.limits.device, " (expected the plan's device to be current)");

  GemmSelection sel;
  if (args.selection != nullptr) {
    validate_gemm_selection(p.desc, args.m, *args.selection);
    const GemmConfigInfo& c = gemm_configs()[args.selection->config.id];
    FLUX_CHECK_ARG(p.max_active_clusters[c.id] >= 0, "flux gemm: selection config ", c.name, " has no kernel for ",
                   to_string(p.desc.dtype), " with weight layout ", to_string(p.desc.layout), " (expected select(M) of this plan)");
    FLUX_CHECK_ARG(!c.swap_ab || p.options.allow_swap_ab, "flux gemm: selection config ", c.name,
                   " is swap-AB but the plan was built with allow_swap_ab = false");
    sel = *args.selection;
  } else {
    sel = select(args.m);
  }
  TileOrderSpec spec = args.order ? *args.order : p.options.order;
  if (args.order) validate_tile_order_spec(spec);
  spec.raster = spec.raster != Raster::kAuto ? spec.raster : sel.raster;
  spec.swizzle = spec.swizzle != 0 ? spec.swizzle : sel.swizzle;
  float* workspace = nullptr;
  uint32_t* arrivals = nullptr;
  const StreamKNeeds sk_needs = p.stream_k_needs_of(sel, args.m);
  if (sel.stream_k && sk_needs.bytes == 0) sel.stream_k = false;  // whole waves (or too few k-tiles): nothing to cut
  if (sel.splits > 1 || sel.stream_k) {
    const bool sk = sel.stream_k;
    const int64_t needed = sk ? sk_needs.bytes : split_k_partial_bytes(sel, args.m, p.desc.n);
    // Counters: the stream-K fixup's flags always; the split-K reduction's arrivals when it publishes.
    const bool want_counters = sk || args.publish.mode != PublishMode::kNone;
    const int64_t counters = sk ? sk_needs.flags : sel.tiles_m * sel.tiles_n;
    if (args.workspace != nullptr) {
      FLUX_CHECK_ARG(args.workspace_bytes >= needed, "flux gemm: workspace of ", args.workspace_bytes, " bytes for a ",
                     sk ? "stream-K" : detail::cat("split-K ", sel.splits), " call with M = ", args.m,
                     " (expected at least ", needed, " bytes: GemmPlan::workspace_bytes(M))");
      workspace = static_cast<float*>(args.workspace);
    }
    if (workspace == nullptr || want_counters) {
      // The plan's own buffers for this stream: the partials (unless the caller gave them) and the counters
      // (zero when allocated; every call leaves them zero).
      std::lock_guard<std::mutex> lock(p.workspace_mu);
      auto it = p.workspaces.find(stream);
      const bool fits = it != p.workspaces.end() && (workspace != nullptr || it->second.bytes >= needed) &&
                        it->second.counters >= counters;
      if (!fits) {
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        FLUX_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
        if (capture == cudaStreamCaptureStatusNone) {
          Impl::Workspace w;
          // The heuristic's choices fit the bounds; a forced split of a large M may need more.
          w.bytes = std::max(split_k_workspace_bound(p.limits), needed);
          w.counters = std::max<int64_t>(4 * p.limits.sm_count, counters);
          if (it != p.workspaces.end()) {
            w.bytes = std::max(w.bytes, it->second.bytes);
            w.counters = std::max(w.counters, it->second.counters);
            FLUX_CUDA_CHECK(cudaFree(it->second.ptr));  // synchronizes: no call still uses it
            FLUX_CUDA_CHECK(cudaFree(it->second.arrivals));
            p.workspaces.erase(it);
          }
          FLUX_CUDA_CHECK(cudaMalloc(&w.ptr, static_cast<size_t>(w.bytes)));
          FLUX_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&w.arrivals), static_cast<size_t>(w.counters) * 4));
          FLUX_CUDA_CHECK(cudaMemset(w.arrivals, 0, static_cast<size_t>(w.counters) * 4));
          it = p.workspaces.emplace(stream, w).first;
        } else {
          it = p.workspaces.end();
        }
      }
      if (it != p.workspaces.end()) {
        if (workspace == nullptr) workspace = static_cast<float*>(it->second.ptr);
        arrivals = it->second.arrivals;
      } else {
        workspace = nullptr;
      }
    }
    if (workspace == nullptr) {
      // Captured before any eager split-K / stream-K call on this stream: no memory may be allocated now, so
      // run the same config whole (same tiles, so the hooks' flags mean the same; right, possibly slower).
      // Pass GemmArgs::workspace (split-K without publish), or run once eagerly on the stream, to capture it.
      sel.reason = detail::cat(sk ? "whole tiles" : "unsplit", " (captured with no ", sk ? "stream-K" : "split-K",
                               " workspace for this stream); ", sel.reason);
      sel.splits = 1;
      sel.stream_k = false;
    }
  }

  gemm::KernelLaunch launch;
  launch.m = args.m;
  launch.n = p.desc.n;
  launch.k = p.desc.k;
  launch.a = args.a;
  launch.b = args.b;
  launch.bias = args.bias;
  launch.c = args.c;
  launch.scale_a = args.scale_a;
  launch.scale_b = args.scale_b;
  launch.scale_vectors = p.desc.scale == ScaleKind::kPerRowCol;
  launch.splits = sel.splits;
  launch.workspace = workspace;
  // Over C's units for every config: a swap-AB kernel walks the same map transposed (ordered_tile_scheduler.cuh).
  launch.order = make_tile_order_map(args.m, p.desc.n, sel.config, spec);
  launch.device = p.limits.device;
  // The fault domain of this call's bounded waits (wait-before-load, the stream-K fixup): the caller's, or the
  // plan's own status and rank.
  FaultDomain fault = args.wait.fault;
  if (fault.local == nullptr) {
    fault = FaultDomain{};
    fault.local = p.status;
    fault.rank = p.options.rank;
  }
  if (args.wait.flags != nullptr) {
    launch.wait.flags = args.wait.flags;
    launch.wait.value = args.wait.value;
    launch.wait.value_ptr = args.wait.value_ptr;
    launch.wait.tiles_m = static_cast<int32_t>(sel.tiles_m);
    launch.wait.ctx =
        device::make_wait_context(fault, p.timeout_ns, WaitSite::kGemmWaitBeforeLoad, args.wait.peer, p.chaos_seed);
    if (launch.wait.ctx.rank < 0) launch.wait.ctx.rank = p.options.rank;
  }
  if (args.publish.mode != PublishMode::kNone) {
    launch.publish.flags = args.publish.flags;
    launch.publish.value = args.publish.value;
    launch.publish.value_ptr = args.publish.value_ptr;
    launch.publish.mode = args.publish.mode == PublishMode::kTileFlag ? gemm::kernel::kPublishTileFlag
                                                                      : gemm::kernel::kPublishBlockCounter;
    launch.publish.tiles_m = static_cast<int32_t>(sel.tiles_m);
    launch.publish.tiles_n = static_cast<int32_t>(sel.tiles_n);
    launch.publish.chaos_seed = p.chaos_seed;
  }
  const int64_t items = launch.order.total_units() * sel.splits;
  const bool split = sel.splits > 1;
  launch.num_clusters = static_cast<int>(std::min<int64_t>(
      items, split ? p.max_active_clusters_partial[sel.config.id] : p.max_active_clusters[sel.config.id]));
  if (sel.stream_k) {
    // Every worker of the decomposition is a cluster of the grid (all resident: max_active_clusters).
    launch.stream_k = gemm::stream_k_shape(launch.order.total_units(), sk_needs.workers,
                                           (p.desc.k + sel.config.tile_k - 1) / sel.config.tile_k, true);
    launch.num_clusters = static_cast<int>(sk_needs.workers);
    launch.stream_k_flags = arrivals;
    launch.stream_k_ctx = device::make_wait_context(fault, p.timeout_ns, WaitSite::kGemmStreamKFixup, -1, p.chaos_seed);
    if (launch.stream_k_ctx.rank < 0) launch.stream_k_ctx.rank = p.options.rank;
  }
  launch.programmatic = args.after_resident_helper;
  if (!split) {
    gemm::launch_kernel(gemm::kernel_key(p.desc, static_cast<gemm::ConfigId>(sel.config.id), gemm::GemmOutput::kFinal),
                        launch, stream);
    return;
  }
  // Split-K: the GEMM writes fp32 partials (no bias, no publish); the reduction sums them in slice order,
  // adds the bias, stores C and publishes each tile after its stores.
  gemm::SplitKReduceLaunch reduce;
  reduce.dtype = gemm_out_dtype(p.desc);
  reduce.scale_a = args.scale_a;  // FP8: the partial kernels write unscaled sums
  reduce.scale_b = args.scale_b;
  reduce.scale_vectors = launch.scale_vectors;
  reduce.m = args.m;
  reduce.n = p.desc.n;
  reduce.splits = sel.splits;
  reduce.tile_m = sel.config.tile_m;
  reduce.tile_n = sel.config.tile_n;
  reduce.workspace = workspace;
  reduce.arrivals = arrivals;
  reduce.bias = args.bias;
  reduce.c = args.c;
  reduce.publish = launch.publish;
  launch.publish = gemm::kernel::PublishHookParams{};
  launch.bias = nullptr;
  gemm::launch_kernel(gemm::kernel_key(p.desc, static_cast<gemm::ConfigId>(sel.config.id), gemm::GemmOutput::kPartial),
                      launch, stream);
  gemm::launch_split_k_reduce(reduce, stream);
}

void GemmPlan::check_status() const {
  const Impl& p = *impl_;
  DeviceStatus host{};
  FLUX_CUDA_CHECK(cudaMemcpy(&host, p.status, sizeof(host), cudaMemcpyDeviceToHost));
  if (host.failed == 0) return;
  FLUX_CUDA_CHECK(cudaMemset(p.status, 0, sizeof(DeviceStatus)));
  {
    // A failed wait may leave split-K arrivals or stream-K flags set: zero them so later calls start clean.
    std::lock_guard<std::mutex> lock(impl_->workspace_mu);
    for (auto& [stream, w] : impl_->workspaces) {
      FLUX_CUDA_CHECK(cudaMemset(w.arrivals, 0, static_cast<size_t>(w.counters) * 4));
    }
  }
  throw TimeoutError(describe_device_status(host));
}

}  // namespace flux
