// src/gemm/kernel/sm90_gemm_kernel.cuh — the GEMM core: one composition, read top-down.
//
//   config   : ConfigShape (src/gemm/gemm_config.h) -> tile, cluster, cooperative or ping-pong
//   pieces   : CUTLASS sm90 TMA warp-specialized mainloop + TMA epilogue (bias per column, no C
//              source), wrapped by WaitBeforeLoad / PublishAfterStore (hooked_collectives.cuh),
//              scheduled by OrderedTileScheduler (ordered_tile_scheduler.cuh)
//   kernel   : cutlass::gemm::kernel::GemmUniversal over those pieces
//   entry    : sm90_gemm_prepare / sm90_gemm_launch (declared in src/gemm/gemm_launch.h), explicitly
//              instantiated once per (dtype, layout, config, output) by the generated sm90_gemm_*.cu files;
//              sm90_fp8_gemm_prepare / _launch once per (output type, layout, config) of the FP8 kernels
//              (e4m3 A and B, ScaledEpilogue) by the generated sm90_fp8_gemm_*.cu files.
//   output   : kFinal writes C in the input dtype (+ bias); kPartial (split-K) writes fp32 partial
//              products of S slices of K to a workspace [S, M, N] that split_k_reduce.cu sums in
//              split order (bias there), so split-K results are bitwise reproducible.
//
// Stream-K (launch.stream_k active, the configs compiled with it): OrderedTileScheduler runs the decomposition of
// src/gemm/stream_k.h and its fixup, with the workspace as one fp32 tile per CTA.
//
// Split-K is a batched problem: L = S slices, slice l of A is columns [l K/S, (l + 1) K/S) (batch
// stride K/S elements, row stride K), likewise for B; the plan only splits when K/S is a multiple of 8
// (16-byte aligned slices for TMA).
//
// Assumptions: sm_90a (built with -gencode=arch=compute_90a,code=sm_90a; GemmPlan refuses other
// devices), A/B/C/bias 16-byte aligned with N, K multiples of 8 (validated by the plan).
#pragma once

#include <cuda_runtime.h>

#include <type_traits>

// The tile widths 112 and 144 need CuTe's extended WGMMA shapes (CMakeLists.txt says why); without them CuTe's
// selector silently builds those tiles from m64n16k16 instructions at half speed.
#if !defined(CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED)
#error "sm90_gemm_kernel.cuh: build with -DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED=1 (CMakeLists.txt, flux_objects)"
#endif

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/device_kernel.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"
#include "src/common/check.h"
#include "src/common/device_guard.h"
#include "src/gemm/gemm_launch.h"
#include "src/gemm/kernel/hooked_collectives.cuh"
#include "src/gemm/kernel/lagged_fp8_mainloop.cuh"
#include "src/gemm/kernel/ordered_tile_scheduler.cuh"

namespace flux::gemm {
namespace kernel {

template <DType>
struct ElementOf;
template <>
struct ElementOf<DType::kBF16> {
  using type = cutlass::bfloat16_t;
};
template <>
struct ElementOf<DType::kFP16> {
  using type = cutlass::half_t;
};
template <>
struct ElementOf<DType::kE4M3> {
  using type = cutlass::float_e4m3_t;
};

// CUTLASS names B by its K x N view: [N, K] row-major (K contiguous) is "column-major".
template <WeightLayout>
struct LayoutBOf;
template <>
struct LayoutBOf<WeightLayout::kNK> {
  using type = cutlass::layout::ColumnMajor;
};
template <>
struct LayoutBOf<WeightLayout::kKN> {
  using type = cutlass::layout::RowMajor;
};

// FP8 epilogue (kScaled): D = (acc * sa) * sb + bias, sa per row of C (a column vector of the tile) and sb
// per column (a row vector), each a vector or one broadcast scalar, chosen per launch (CUTLASS's dynamic
// broadcast: stride true = a vector, false = element 0 for every row / column); bias per column, 0 when
// null. All in fp32, rounded once to the output type.
template <class TileShape, class ElementOut>
struct ScaledEpilogue {
  using RoundStyle = cutlass::FloatRoundStyle;
  static constexpr RoundStyle kRound = RoundStyle::round_to_nearest;
  // Alignment 1 along M: M need not be a multiple of 4 (a 16-byte load there would read past scale_a).
  using RowScale = cutlass::epilogue::fusion::Sm90ColBroadcast<0, TileShape, float, float,
                                                               cute::Stride<bool, cute::_0, int64_t>, 1>;
  using ColScale = cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, float, float,
                                                               cute::Stride<cute::_0, bool, int64_t>>;
  using Bias = cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, ElementOut, float,
                                                           cute::Stride<cute::_0, cute::_1, int64_t>>;
  using Scaled = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, float, float, kRound>,
      cutlass::epilogue::fusion::Sm90AccFetch, RowScale>;
  using Op = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<cutlass::homogeneous_multiply_add, ElementOut, float, kRound>, Scaled,
      ColScale, Bias>;
};

template <class ElementIn, class ElementOut_, WeightLayout kLayout, ConfigId kConfig, GemmOutput kOutput, bool kScaled_>
struct Sm90GemmT {
  static constexpr ConfigShape kShape = config_shape(kConfig);
  static constexpr int kAlignment = 16 / int(sizeof(ElementIn));  // elements: 16 bytes, what TMA needs
  static constexpr bool kPartial = kOutput == GemmOutput::kPartial;
  static constexpr bool kScaled = kScaled_;
  static_assert(!kScaled || (!kPartial && !kShape.swap_ab), "the FP8 kernels write C, unswapped");
  // Stream-K runs in the configs compiled for it (ConfigShape::stream_k: cooperative, writing C unswapped);
  // the others get a scheduler without it (compiled in, its state spills registers: gemm_config.h).
  static constexpr bool kStreamK = kShape.stream_k && !kPartial;
  static_assert(!kShape.stream_k || (!kShape.pingpong && !kShape.swap_ab && !kShape.skinny),
                "stream-K needs the cooperative kernel layer (it takes k ranges) writing C unswapped");

  // Swap-AB (ConfigShape::swap_ab): the kernel computes C^T [N, M] = op(B) A^T. Its "A" operand is the
  // weight ([N, K] is K-major: RowMajor; [K, N] is N-major: ColumnMajor), its "B" operand is A ([M, K],
  // K-major: ColumnMajor in CUTLASS's K x N view), and its D is column-major (element (n, m) at
  // m * N + n: row-major C). Tile and cluster swap with the operands; bias is per row of the kernel.
  static constexpr bool kSwap = kShape.swap_ab;
  static constexpr int kTileM = kSwap ? kShape.tile_n : kShape.tile_m;  // the kernel's own M, N
  static constexpr int kTileN = kSwap ? kShape.tile_m : kShape.tile_n;
  static constexpr int kClusterM = kSwap ? kShape.cluster_n : kShape.cluster_m;
  static constexpr int kClusterN = kSwap ? kShape.cluster_m : kShape.cluster_n;

  using Element = ElementIn;       // A and B
  using ElementOut = ElementOut_;  // C and bias
  using ElementAccumulator = float;
  using ElementD = std::conditional_t<kPartial, float, ElementOut>;
  static constexpr int kAlignmentD = 16 / int(sizeof(ElementD));
  using LayoutA = std::conditional_t<
      kSwap,
      std::conditional_t<kLayout == WeightLayout::kNK, cutlass::layout::RowMajor, cutlass::layout::ColumnMajor>,
      cutlass::layout::RowMajor>;
  using LayoutB = std::conditional_t<kSwap, cutlass::layout::ColumnMajor, typename LayoutBOf<kLayout>::type>;
  using LayoutC = std::conditional_t<kSwap, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;

  using TileShape = cute::Shape<cute::Int<kTileM>, cute::Int<kTileN>, cute::Int<kShape.tile_k>>;
  using ClusterShape = cute::Shape<cute::Int<kClusterM>, cute::Int<kClusterN>, cute::_1>;
  using MainloopSchedule = std::conditional_t<kShape.pingpong, cutlass::gemm::KernelTmaWarpSpecializedPingpong,
                                              cutlass::gemm::KernelTmaWarpSpecializedCooperative>;
  using EpilogueSchedule = std::conditional_t<kShape.pingpong, cutlass::epilogue::TmaWarpSpecialized,
                                              cutlass::epilogue::TmaWarpSpecializedCooperative>;

  // kFinal: D = acc + bias[n] (bias pointer null: + 0); kPartial: D = acc in fp32. No C operand is read.
  // N is the kernel's column (per-column bias), or its row under swap-AB (per-row bias).
  // kScaled (FP8): ScaledEpilogue above.
  using FusionOp = std::conditional_t<
      kScaled, typename ScaledEpilogue<TileShape, ElementOut>::Op,
      std::conditional_t<
          kPartial, cutlass::epilogue::fusion::LinearCombination<float, ElementAccumulator, void, ElementAccumulator>,
          std::conditional_t<kSwap,
                             cutlass::epilogue::fusion::LinCombPerRowBias<ElementOut, ElementAccumulator, ElementOut,
                                                                          void, ElementAccumulator>,
                             cutlass::epilogue::fusion::LinCombPerColBias<ElementOut, ElementAccumulator, ElementOut,
                                                                          void, ElementAccumulator>>>>;

  // The epilogue's subtile: CUTLASS's choice (64 or 128 rows x 32 columns for 16-bit C), or ConfigShape::epi_n columns
  // (rows: 64 ping-pong, 128 cooperative, what CUTLASS's builder takes).
  static constexpr int kEpiM = kShape.pingpong ? 64 : (kTileM < 128 ? kTileM : 128);
  static constexpr int kEpiN = kShape.epi_n == 0 ? 16 : kShape.epi_n;  // (16: unused, CUTLASS's choice)
  static_assert(kShape.epi_n == 0 || (!kSwap && kTileN % kEpiN == 0 && kEpiN % 16 == 0),
                "an epilogue subtile divides the (unswapped) tile's N in multiples of 16");
  using EpilogueTile = std::conditional_t<kShape.epi_n == 0, cutlass::epilogue::collective::EpilogueTileAuto,
                                          cute::Shape<cute::Int<kEpiM>, cute::Int<kEpiN>>>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      EpilogueTile, ElementAccumulator, ElementAccumulator, void, LayoutC,
      kAlignmentD, ElementD, LayoutC, kAlignmentD, EpilogueSchedule, FusionOp>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, LayoutA, kAlignment, Element, LayoutB,
      kAlignment, ElementAccumulator, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  // FP8: the math side promotes one k-tile behind (lagged_fp8_mainloop.cuh); the 16-bit kernels' is CUTLASS's.
  using Mainloop = std::conditional_t<kScaled, LaggedFp8Mma<CollectiveMainloop>, CollectiveMainloop>;

  // Under swap-AB the scheduler walks C's units transposed and the hooks index C's M-blocks and tiles.
  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, WaitBeforeLoad<Mainloop, kSwap>,
                                                      PublishAfterStore<CollectiveEpilogue, kSwap,
                                                                        std::bool_constant<kShape.pingpong>>,
                                                      OrderedTileSchedulerTag<kStreamK, kSwap>>;

  static_assert(Kernel::SharedStorageSize <= 227 * 1024, "GEMM core config exceeds the sm_90 shared-memory budget");
};

// The 16-bit kernels: one dtype for A, B, bias and C.
template <DType kDType, WeightLayout kLayout, ConfigId kConfig, GemmOutput kOutput>
using Sm90Gemm = Sm90GemmT<typename ElementOf<kDType>::type, typename ElementOf<kDType>::type, kLayout, kConfig,
                           kOutput, false>;
// The FP8 kernels: e4m3 A and B, C and bias in kOut, scaled.
template <DType kOut, WeightLayout kLayout, ConfigId kConfig>
using Sm90Fp8Gemm = Sm90GemmT<cutlass::float_e4m3_t, typename ElementOf<kOut>::type, kLayout, kConfig,
                              GemmOutput::kFinal, true>;

// `attributes` has room for two: the cluster shape, and (programmatic) programmatic stream
// serialization, which lets the GEMM start once every CTA of the previous kernel on the stream has
// started (issued griddepcontrol.launch_dependents) or finished. The GEMM never issues
// griddepcontrol.wait (CUTLASS_ENABLE_GDC_FOR_SM90 is not defined), so when it does start early it
// runs beside that kernel; when the runtime does not overlap them it starts after it, as a plain launch.
template <class Kernel>
cudaLaunchConfig_t cluster_launch_config(dim3 grid, cudaLaunchAttribute* attributes, cudaStream_t stream, int cm,
                                         int cn, bool programmatic = false) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(Kernel::MaxThreadsPerBlock, 1, 1);
  config.dynamicSmemBytes = Kernel::SharedStorageSize;
  config.stream = stream;
  attributes[0].id = cudaLaunchAttributeClusterDimension;
  attributes[0].val.clusterDim.x = static_cast<unsigned>(cm);
  attributes[0].val.clusterDim.y = static_cast<unsigned>(cn);
  attributes[0].val.clusterDim.z = 1;
  config.attrs = attributes;
  config.numAttrs = 1;
  if (programmatic) {
    attributes[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[1].val.programmaticStreamSerializationAllowed = 1;
    config.numAttrs = 2;
  }
  return config;
}

template <class G>
KernelInfo prepare(int device) {
  using Kernel = typename G::Kernel;
  detail::DeviceGuard guard(device);
  auto* entry = &cutlass::device_kernel<Kernel>;
  FLUX_CUDA_CHECK(cudaFuncSetAttribute(entry, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(Kernel::SharedStorageSize)));
  cudaLaunchAttribute attributes[2] = {};
  cudaLaunchConfig_t config = kernel::cluster_launch_config<Kernel>(
      dim3(G::kClusterM, G::kClusterN, 1), attributes, nullptr, G::kClusterM, G::kClusterN);
  int clusters = 0;
  FLUX_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, entry, &config));
  KernelInfo info;
  info.smem_bytes = Kernel::SharedStorageSize;
  info.threads = Kernel::MaxThreadsPerBlock;
  info.max_active_clusters = clusters;
  return info;
}

template <class G, WeightLayout kLayout>
void launch(const KernelLaunch& launch, cudaStream_t stream) {
  using Kernel = typename G::Kernel;
  using Element = typename G::Element;
  using Mainloop = typename Kernel::CollectiveMainloop;
  using Epilogue = typename Kernel::CollectiveEpilogue;

  const int splits = G::kPartial ? launch.splits : 1;
  FLUX_CHECK(splits >= 1 && launch.k % splits == 0 && (launch.k / splits) % 8 == 0,
             "GEMM core: split-K factor ", splits, " does not divide K = ", launch.k, " into multiples of 8");
  FLUX_CHECK(!G::kPartial || (launch.workspace != nullptr && launch.publish.mode == kernel::kPublishNone),
             "GEMM core: a split-K launch needs a workspace and publishes from the reduction, not the GEMM");
  const bool stream_k = launch.stream_k.active();
  // The ping-pong kernel layer always runs the whole K (it ignores the scheduler's k ranges).
  FLUX_CHECK(!stream_k || (G::kStreamK && launch.workspace != nullptr &&
                           launch.stream_k_flags != nullptr && launch.stream_k_ctx.status != nullptr &&
                           launch.stream_k.workers == launch.num_clusters),
             "GEMM core: stream-K launch of config ", G::kShape.name,
             " needs a cooperative kernel, its workspace, flags and wait record, and one cluster per worker");
  const int m = static_cast<int>(launch.m), n = static_cast<int>(launch.n), k = static_cast<int>(launch.k);
  const int ks = k / splits;  // K of each slice
  // The kernel's problem: (M, N) of C, or (N, M) under swap-AB with the operands exchanged.
  const int km = G::kSwap ? n : m, kn = G::kSwap ? m : n;
  const void* op_a = G::kSwap ? launch.b : launch.a;
  const void* op_b = G::kSwap ? launch.a : launch.b;
  typename Kernel::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {km, kn, ks, splits};
  args.mainloop.ptr_A = static_cast<Element const*>(op_a);
  args.mainloop.dA = cutlass::make_cute_packed_stride(typename Mainloop::StrideA{}, cute::make_shape(km, k, 1));
  args.mainloop.ptr_B = static_cast<Element const*>(op_b);
  args.mainloop.dB = cutlass::make_cute_packed_stride(typename Mainloop::StrideB{}, cute::make_shape(kn, k, 1));
  // Slice l starts ks columns of A (and ks rows of B's K) after slice l - 1; the row strides stay those
  // of the whole matrices. The weight [K, N] (N-major) advances ks * N per slice, a K-major operand ks.
  const bool weight_n_major = kLayout == WeightLayout::kKN;
  cute::get<2>(args.mainloop.dA) = G::kSwap && weight_n_major ? int64_t(ks) * n : int64_t(ks);
  cute::get<2>(args.mainloop.dB) = !G::kSwap && weight_n_major ? int64_t(ks) * n : int64_t(ks);
  args.mainloop.wait = launch.wait;
  using ElementOut = typename G::ElementOut;
  if constexpr (G::kScaled) {
    FLUX_CHECK(launch.scale_a != nullptr && launch.scale_b != nullptr, "GEMM core: an FP8 launch needs both scales");
    // The tree of ScaledEpilogue, children first: op_0 = (acc: op_0, sa: op_1, multiply: op_2), op_1 = sb,
    // op_2 = bias, op_3 = multiply-add.
    auto& t = args.epilogue.thread;
    t.op_0.op_1 = {launch.scale_a, 1.0f, cute::Stride<bool, cute::_0, int64_t>{launch.scale_vectors, {}, 0}};
    t.op_1 = {launch.scale_b, 1.0f, cute::Stride<cute::_0, bool, int64_t>{{}, launch.scale_vectors, 0}};
    t.op_2 = {static_cast<ElementOut const*>(launch.bias), ElementOut(0.0f), {}};
    // CUTLASS's arguments check the interval (a multiple of 4); LaggedFp8Mma promotes every k-tile (4 MMAs).
    args.mainloop.mma_promotion_interval = kernel::kLaggedFp8MmasPerKTile;
  } else {
    FLUX_CHECK(launch.scale_a == nullptr && launch.scale_b == nullptr, "GEMM core: scales given to a 16-bit kernel");
    args.epilogue.thread.alpha = 1.0f;
    args.epilogue.thread.beta = 0.0f;
    if constexpr (!G::kPartial) args.epilogue.thread.bias_ptr = static_cast<ElementOut const*>(launch.bias);
  }
  args.epilogue.ptr_C = nullptr;
  args.epilogue.dC = cutlass::make_cute_packed_stride(typename Epilogue::StrideC{}, cute::make_shape(km, kn, splits));
  args.epilogue.ptr_D = static_cast<typename G::ElementD*>(G::kPartial ? launch.workspace : launch.c);
  // Row-major [M, N] (and the partials' [S, M, N]) is column-major [N, M] in the swapped kernel's view.
  args.epilogue.dD = cutlass::make_cute_packed_stride(typename Epilogue::StrideD{}, cute::make_shape(km, kn, splits));
  args.epilogue.publish = launch.publish;
  args.hw_info.device_id = launch.device;
  args.hw_info.sm_count = launch.num_clusters * G::kClusterM * G::kClusterN;
  args.scheduler.order = launch.order;
  args.scheduler.splits = splits;
  if constexpr (G::kStreamK) {
    if (stream_k) {
      args.scheduler.stream_k.sk = launch.stream_k;
      args.scheduler.stream_k.workspace = launch.workspace;
      args.scheduler.stream_k.flags = launch.stream_k_flags;
      args.scheduler.stream_k.ctx = launch.stream_k_ctx;
    }
  }

  FLUX_CHECK(Kernel::can_implement(args), "CUTLASS rejected a GEMM the plan validated (m=", m, " n=", n, " k=", k,
             " splits=", splits, " config ", G::kShape.name, ")");
  typename Kernel::Params params = Kernel::to_underlying_arguments(args, nullptr);

  cudaLaunchAttribute attributes[2] = {};
  cudaLaunchConfig_t config = kernel::cluster_launch_config<Kernel>(
      dim3(G::kClusterM, G::kClusterN, static_cast<unsigned>(launch.num_clusters)), attributes, stream, G::kClusterM,
      G::kClusterN, launch.programmatic);
  FLUX_CUDA_CHECK(cudaLaunchKernelEx(&config, &cutlass::device_kernel<Kernel>, params));
  FLUX_CUDA_CHECK_LAUNCH(G::kShape.name);
}

}  // namespace kernel

template <DType kDType, WeightLayout kLayout, ConfigId kConfig, GemmOutput kOutput>
KernelInfo sm90_gemm_prepare(int device) {
  return kernel::prepare<kernel::Sm90Gemm<kDType, kLayout, kConfig, kOutput>>(device);
}

template <DType kDType, WeightLayout kLayout, ConfigId kConfig, GemmOutput kOutput>
void sm90_gemm_launch(const KernelLaunch& launch, cudaStream_t stream) {
  kernel::launch<kernel::Sm90Gemm<kDType, kLayout, kConfig, kOutput>, kLayout>(launch, stream);
}

template <DType kOut, WeightLayout kLayout, ConfigId kConfig>
KernelInfo sm90_fp8_gemm_prepare(int device) {
  return kernel::prepare<kernel::Sm90Fp8Gemm<kOut, kLayout, kConfig>>(device);
}

template <DType kOut, WeightLayout kLayout, ConfigId kConfig>
void sm90_fp8_gemm_launch(const KernelLaunch& launch, cudaStream_t stream) {
  kernel::launch<kernel::Sm90Fp8Gemm<kOut, kLayout, kConfig>, kLayout>(launch, stream);
}

}  // namespace flux::gemm
