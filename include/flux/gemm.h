// flux/gemm.h — the Hopper GEMM core that every fused op composes.
//
//   C [M, N] = A [M, K] · op(B) (+ bias [N])      A, C row-major; B [N, K] (kNK) or [K, N] (kKN)
//
// bf16 or fp16 in and out (one dtype for A, B, bias and C), fp32 accumulation; or FP8: A and B in e4m3,
// C and bias in GemmDesc::out_dtype (bf16 / fp16), scaled per tensor or per row of A and column of B
// (GemmDesc::scale, GemmArgs::scale_a / scale_b; C = acc * sa * sb + bias), B as [N, K] only. Any M >= 1;
// N and K multiples of 8 (16 for e4m3: rows of 16 bytes, what TMA needs); A, B, C and bias 16-byte aligned. Kernel: a
// persistent, warp-specialized CUTLASS 3 sm90 kernel (TMA + WGMMA), one of a few tile/cluster
// configs chosen per shape by select_gemm_config() (src/gemm/gemm_config.cpp, reasons there).
//
// Three extension points, each off unless set, for the fused ops:
//   (a) tile order  — GemmOptions::order: the persistent scheduler visits tiles in that order
//                     (flux/tile_order.h), e.g. rank r starting at segment r of W;
//   (b) wait-before-load — GemmArgs::wait: the producer loads the rows of M-block i only after
//                     flags[i] has reached value (acquire, bounded by the wait timeout);
//   (c) publish-after-store — GemmArgs::publish: once a tile of C is written, its flag is released
//                     (or its M-block counter bumped) so another agent can consume it.
// M-blocks are select(m).tile_m rows; tiles are select(m).tile_m x select(m).tile_n.
//
// Threading: a plan's configuration is fixed at construction; run() may be called from several threads
// on different streams (its selection cache and per-stream split-K workspaces are mutex-guarded). run()
// never synchronizes the host (CUDA-graph capturable), except the first split-K call on a stream,
// which allocates that stream's workspace (outside capture only).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flux/device_status.h"
#include "flux/error.h"
#include "flux/tile_order.h"
#include "flux/types.h"

namespace flux {

// Device limits the plan reads from cudaGetDeviceProperties (never from a table of known GPUs).
struct DeviceLimits {
  int device = 0;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int64_t smem_per_block_optin = 0;  // bytes
  int64_t l2_bytes = 0;
  std::string name;
  // Peak HBM bandwidth, bytes per second (memory clock x 2 x bus width), 0 where the device does not report it.
  // The GEMM heuristic takes its large-M rate table by it (gemm_config.cpp kLowHbmBytesPerS); 0: the default table.
  int64_t hbm_bytes_per_s = 0;
};
DeviceLimits query_device_limits(int device = -1);  // -1: the current device

// One compiled kernel configuration.
struct GemmConfigInfo {
  int id = 0;
  const char* name = "";  // e.g. "128x256x64_coop_c2x1"
  int tile_m = 0, tile_n = 0, tile_k = 0;
  int cluster_m = 1, cluster_n = 1;
  bool pingpong = false;  // ping-pong (two math warp groups on alternate tiles) vs cooperative
  bool split_k = false;   // can run split-K (compiled with fp32 partial output as well)
  bool swap_ab = false;   // computes C^T = op(B) A^T (decode-sized M); the extension points in C's terms
  bool skinny = false;    // a decode kernel (no clusters, one CTA per tile; weight [N, K] only)
  bool fp8 = false;       // an e4m3-input config (compiled for e4m3 only; the others for bf16 / fp16 only)
  bool stream_k = false;  // can run stream-K (compiled with it: 128x128x64_coop_c1x2 only, see gemm_config.h)
  bool gemv = false;      // a skinny config whose kernel is the GEMV one (M <= tile_m rows per unit, CUDA-core FMAs)
};
const std::vector<GemmConfigInfo>& gemm_configs();
// Whether this build has the config's kernel for (dtype, layout) (the skinny configs: WeightLayout::kNK only).
bool gemm_config_compiled(const GemmConfigInfo& config, DType dtype, WeightLayout layout);

// Whether the heuristic may use stream-K (GemmOptions::stream_k, knob FLUX_GEMM_STREAM_K).
enum class StreamKMode : int32_t {
  kKnob = -1,  // GemmOptions only: take the knob FLUX_GEMM_STREAM_K (auto | off | on)
  kAuto = 0,   // where the time model predicts it faster
  kOff = 1,    // never
  kOn = 2,     // wherever the config can and its units leave a partial wave (a cooperative config's whole-tile
               // variant is then no candidate; forced configs: stream-K; for tests and sweeps)
};

// What run() will do for a given M: config, resolved tile order and the reason for the choice.
struct GemmSelection {
  GemmConfigInfo config;
  Raster raster = Raster::kRowMajor;
  int32_t swizzle = 1;
  int64_t tiles_m = 0, tiles_n = 0;  // real tiles of C (flags of the hooks are indexed by these)
  // Split-K factor: K is cut into `splits` slices of K / splits (a multiple of 8) computed by separate
  // CTAs into fp32 partials, which a second kernel sums in slice order (+ bias) into C and publishes
  // tile by tile: bitwise reproducible. 1 = the whole K in one CTA per tile.
  int32_t splits = 1;
  // Stream-K (src/gemm/stream_k.h; the configs compiled for it, splits 1): when the units do not fill whole waves,
  // the last ~1-2 waves' units are cut into k ranges, one per cluster of the persistent grid, and summed in a
  // fixed order inside the kernel (bitwise reproducible). The hooks see whole tiles: a piece waits before its
  // loads, the tile is published once its final sum is stored.
  bool stream_k = false;
  double predicted_us = 0.0;         // the heuristic's predicted time (0 when not from the model)
  std::string reason;                // why the heuristic (or a knob / option) chose it
};

struct GemmDesc {
  int64_t n = 0;
  int64_t k = 0;
  DType dtype = DType::kBF16;  // A and B (and, for bf16 / fp16, bias and C)
  WeightLayout layout = WeightLayout::kNK;
  // FP8 (dtype kE4M3) only: the type of C and bias (bf16 or fp16) and how A and B are scaled
  // (kPerTensor or kPerRowCol). bf16 / fp16 inputs write C in their own type and take no scales
  // (scale must stay kNone; out_dtype is not read).
  DType out_dtype = DType::kBF16;
  ScaleKind scale = ScaleKind::kNone;
};
// The type of C and bias for a desc: out_dtype for FP8 inputs, else dtype.
inline DType gemm_out_dtype(const GemmDesc& desc) { return desc.dtype == DType::kE4M3 ? desc.out_dtype : desc.dtype; }

struct GemmOptions {
  std::string config;          // config name; "" = knob FLUX_GEMM_CONFIG ("auto" = heuristic)
  TileOrderSpec order;         // raster kAuto / swizzle 0 = knobs FLUX_GEMM_RASTER / FLUX_GEMM_SWIZZLE
  uint64_t wait_timeout_ns = 0;  // bound on each wait-before-load; 0 = knob FLUX_WAIT_TIMEOUT_MS
  int32_t rank = -1;           // reported in timeout errors (fused ops set it)
  int device = -1;             // -1: the current device at construction
  // At most this many SMs for the persistent grid (0: all). A fused op leaves the rest to kernels
  // that run beside the GEMM (e.g. GEMM+RS's reduction); the config model counts waves with it.
  int32_t max_sms = 0;
  // Split-K factor: 0 = knob FLUX_GEMM_SPLIT_K (0 there = the heuristic), 1 = never split, S > 1 = always
  // S slices (K / S must be a multiple of 8, and the config one of those with split_k).
  int32_t split_k = 0;
  // Stream-K (GemmSelection::stream_k). Its fixup waits for other CTAs of the same grid, so every CTA must
  // become resident: fused ops whose ranks share a GPU (spinning kernels of other ranks beside it) turn it off.
  StreamKMode stream_k = StreamKMode::kKnob;
  // Let the heuristic (and a tuning cache) pick swap-AB configs (GemmConfigInfo::swap_ab, the decode
  // configs). Their kernels run the tiles transposed, but the tile order, wait-before-load and
  // publish-after-store are in C's terms for them as for every config (M-blocks of tile_m rows of C, tiles
  // of C), so the fused ops use them too; false keeps them out (the skinny / GEMV configs take decode M).
  bool allow_swap_ab = true;
  // A tuning cache written by `flux-bench tune` (src/gemm/tune_cache.h): "" = knob FLUX_TUNE_CACHE,
  // "none" = no cache. Entries for this (dtype, layout, N, K, SMs, M bucket) override the heuristic; a
  // cache for another GPU or build is ignored with a one-line warning.
  std::string tune_cache;
  // (FP8 plans have no promotion interval to set: the tensor cores' partial sums are added into the fp32
  // accumulators after every k-tile, one k-tile behind the MMAs; GemmOptions::fp8_promotion and the knob
  // FLUX_GEMM_FP8_PROMOTION were retired with it, see knobs::retired().)
};

// (b) wait-before-load.
struct GemmWait {
  const uint32_t* flags = nullptr;  // device memory, select(m).tiles_m flags, one per M-block
  uint32_t value = 1;               // M-block i is loaded once flags[i] has reached value (epoch counter,
                                    // compared wrap-safe: int32(flags[i] - value) >= 0)
  // If set, the value is read from this device word when the kernel waits, instead of `value`: a
  // per-call epoch that advances on the device keeps CUDA-graph replays right (a captured `value` is
  // replayed unchanged).
  const uint32_t* value_ptr = nullptr;
  int32_t peer = -1;                // reported in timeout errors: who should have set the flags
  // Where a timeout is recorded: a communicator's fault domain (fused ops pass theirs, so the failure
  // poisons every rank), or, with fault.local null, the plan's own record (GemmPlan::check_status).
  FaultDomain fault{};
};

enum class PublishMode : int32_t {
  kNone = 0,
  kTileFlag = 1,      // flags[i * tiles_n + j] = value after tile (i, j) is written
  kBlockCounter = 2,  // flags[i] += 1 after each tile of M-block i is written (tiles_n per block)
};

// (c) publish-after-store. Release, system scope: a reader that acquires the flag sees the tile.
struct GemmPublish {
  PublishMode mode = PublishMode::kNone;
  uint32_t* flags = nullptr;  // device memory: tiles_m * tiles_n (kTileFlag) or tiles_m (kBlockCounter)
  uint32_t value = 1;
  const uint32_t* value_ptr = nullptr;  // kTileFlag: if set, the value stored is read from this device word
};

struct GemmArgs {
  int64_t m = 0;
  const void* a = nullptr;     // [m, k]
  const void* b = nullptr;     // [n, k] (kNK) or [k, n] (kKN)
  const void* bias = nullptr;  // [n] or nullptr: added once to every row
  void* c = nullptr;           // [m, n]
  // FP8 scales (fp32, device memory; required for e4m3, null otherwise): per tensor one value each;
  // per row / column scale_a [m] and scale_b [n], 16-byte aligned. Read on the device at every run (so
  // a CUDA-graph replay uses the current values).
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  GemmWait wait;
  GemmPublish publish;
  // This call's tile order instead of GemmOptions::order (its raster / swizzle, when auto, still come
  // from the plan); fused ops set it because segment rows follow M.
  const TileOrderSpec* order = nullptr;
  // Launch as a programmatic dependent of the kernel just before it on the stream: the GEMM does not
  // start before every CTA of that kernel has started (it must issue griddepcontrol.launch_dependents
  // at its start) or finished. A fused op whose GEMM waits on such a helper kernel uses this so the
  // helper is always resident when the GEMM waits, whatever else holds SMs (and if the runtime chooses
  // not to overlap the two, the GEMM simply starts after the helper: still correct).
  bool after_resident_helper = false;
  // Split-K partials: at least GemmPlan::workspace_bytes(m) bytes of device memory, 16-byte aligned,
  // used only by this call (stream-ordered). Null: the plan's own buffer for `stream`, allocated on the
  // first split-K call on that stream (outside graph capture; a split-K call captured on a stream with
  // no buffer yet runs unsplit instead, see GemmPlan::run).
  void* workspace = nullptr;
  int64_t workspace_bytes = 0;
  // Decide once: this call's selection, as GemmPlan::select(m) returned it. A fused op selects once per
  // call and passes the same description to the GEMM and to its side kernels (which read its tile grid),
  // so the two can never disagree. Null: run() calls select(m) itself. Checked (InvalidArgument, nothing
  // launched): a config this plan has a kernel for, its tile grid for this M and N, a split it can run,
  // a resolved raster and swizzle, and no swap-AB config on a plan that does not allow one.
  const GemmSelection* selection = nullptr;
};

class GemmPlan {
 public:
  // Validates desc and options (InvalidArgument), checks the device is sm_90 (Unsupported), and
  // prepares every config of (dtype, layout): shared-memory limit, cluster occupancy.
  explicit GemmPlan(const GemmDesc& desc, const GemmOptions& options = {});
  ~GemmPlan();
  GemmPlan(GemmPlan&&) noexcept;
  GemmPlan& operator=(GemmPlan&&) noexcept;
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;

  const GemmDesc& desc() const;
  const DeviceLimits& device_limits() const;
  // The options as resolved from GemmOptions and the knobs (config, raster, swizzle, SM limit, wait
  // timeout): fused ops compare it across ranks at plan build.
  std::string resolved_options() const;
  GemmSelection select(int64_t m) const;
  // Bytes of split-K / stream-K workspace a call with this M needs (0 when select(m) does neither).
  int64_t workspace_bytes(int64_t m) const;

  // Validates args (InvalidArgument, nothing launched), then launches on `stream`.
  void run(const GemmArgs& args, cudaStream_t stream) const;

  // After the stream has been synchronized: throws TimeoutError if a wait-before-load expired since
  // the last check (and clears the record). Synchronous; never call it inside graph capture.
  void check_status() const;
  // Device address of the plan's DeviceStatus (for ops that share it with their own kernels).
  DeviceStatus* device_status() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Validation used by GemmPlan (exposed so CPU tests reach it without a GPU). Each throws
// InvalidArgument saying what was wrong and what was expected.
void validate_gemm_desc(const GemmDesc& desc);
void validate_gemm_args(const GemmDesc& desc, const GemmArgs& args);
void validate_tile_order_spec(const TileOrderSpec& spec);
// A selection given through GemmArgs::selection, against the problem: the config is one of gemm_configs()
// (its tiles as listed), tiles_m / tiles_n are its grid for M and desc.n, splits is 1 or a split-K the
// config can run on desc.k, raster and swizzle are resolved.
void validate_gemm_selection(const GemmDesc& desc, int64_t m, const GemmSelection& selection);
// Resolve a spec against a problem and a config (raster / swizzle must already be resolved).
TileOrderMap make_tile_order_map(int64_t m, int64_t n, const GemmConfigInfo& config, const TileOrderSpec& spec);

// The config heuristic: pure function of the shape and the device limits (no GPU needed).
// `max_active_clusters[i]` is how many clusters of config i fit on the device at once (0: use
// sm_count / cluster size; negative: config i has no kernel for the plan, not a candidate). `split_k`: 0 = choose (1 .. kMaxSplitK), 1 = never split, S > 1 = S.
// `allow_swap_ab`: whether swap-AB configs are candidates. `dtype`: the input type; the candidates are
// the configs for it (GemmConfigInfo::fp8 for e4m3, the others for bf16 / fp16). `stream_k`: kAuto, kOff or
// kOn (not kKnob).
GemmSelection select_gemm_config(int64_t m, int64_t n, int64_t k, const DeviceLimits& limits,
                                 const std::vector<int>& max_active_clusters = {}, int32_t split_k = 0,
                                 bool allow_swap_ab = true, DType dtype = DType::kBF16,
                                 StreamKMode stream_k = StreamKMode::kAuto);
// The stream-K decomposition a selection runs with on `workers` clusters (inactive unless sel.stream_k), and
// the workspace it needs: one fp32 tile per CTA of the grid, and one flag per CTA and math warp group.
struct StreamKNeeds {
  int64_t workers = 0;       // the persistent grid (clusters)
  int64_t bytes = 0;         // partials
  int64_t flags = 0;         // uint32 flags (zero between calls)
};
StreamKNeeds stream_k_needs(const GemmSelection& sel, int64_t m, int64_t n, int64_t k, int64_t workers);

// Split-K limits: at most this many slices, each at least kMinSplitKDepth deep (K / S), and at most two
// waves of work items (so the workspace is bounded by split_k_workspace_bound()).
constexpr int32_t kMaxSplitK = 16;
constexpr int64_t kMinSplitKDepth = 256;
// Whether K can be cut into S slices for a split-K of `dtype` inputs (S divides K, each slice a multiple of 16
// bytes of K: 8 elements of bf16 / fp16, 16 of e4m3; what TMA and the skinny kernels' 16-byte copies need).
bool split_k_divides(int64_t k, int32_t splits, DType dtype = DType::kBF16);
// Whether S is a split the heuristic (and flux-bench's sweep and tune) consider for this K: it divides K
// and each slice is at least kMinSplitKDepth deep.
inline bool split_k_candidate(int64_t k, int32_t splits, DType dtype = DType::kBF16) {
  return splits >= 2 && splits <= kMaxSplitK && split_k_divides(k, splits, dtype) && k / splits >= kMinSplitKDepth;
}
// Whether S slices keep config c's split-K work items (its units for M x N, times S) within two waves of the
// most clusters `concurrent` (the workspace bound above): the heuristic asks it with the clusters it measured
// resident; flux-bench's sweep and tune with the device's upper bound, split_k_max_clusters().
bool split_k_within_waves(const GemmConfigInfo& c, int64_t m, int64_t n, int32_t splits, int64_t concurrent);
// The most clusters of config c an SM count can hold at once: sm_count / cluster size (x the skinny configs'
// CTAs per SM); the occupancy a plan measures is at most this.
int64_t split_k_max_clusters(const GemmConfigInfo& c, int32_t sm_count);
// The most workspace any split-K or stream-K selection on this device can ask for (bytes).
int64_t split_k_workspace_bound(const DeviceLimits& limits);

}  // namespace flux
