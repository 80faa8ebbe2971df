// src/baseline/cublas_gemm.cpp — cuBLAS / cuBLASLt GEMM with per-shape algorithm choice.
//
// Row-major C [M, N] = A [M, K] · op(B) is computed as the column-major C^T [N, M] = op'(B) · A^T:
//   B [N, K] row-major is column-major K x N (ld K), used transposed; B [K, N] row-major is
//   column-major N x K (ld N), used as is; A [M, K] row-major is column-major K x M (ld K).
#include "flux/baseline/cublas_gemm.h"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <vector>

#include "src/common/check.h"
#include "src/common/dtype_maps.h"

namespace flux {

namespace {
constexpr size_t kWorkspaceBytes = size_t(64) << 20;  // cuBLAS asks for >= 32 MiB on Hopper

cudaDataType_t cuda_type(DType dtype) { return detail::cuda_data_type(dtype); }
}  // namespace

struct CublasWorkspace::Impl {
  cublasLtHandle_t lt = nullptr;
  cublasHandle_t blas = nullptr;
  void* workspace = nullptr;
  ~Impl() {
    if (lt) cublasLtDestroy(lt);
    if (blas) cublasDestroy(blas);
    if (workspace) cudaFree(workspace);
  }
};

CublasWorkspace::CublasWorkspace() : impl_(std::make_unique<Impl>()) {
  FLUX_CUDA_CHECK(cudaMalloc(&impl_->workspace, kWorkspaceBytes));
  FLUX_CUBLAS_CHECK(cublasLtCreate(&impl_->lt));
  FLUX_CUBLAS_CHECK(cublasCreate(&impl_->blas));
  FLUX_CUBLAS_CHECK(cublasSetWorkspace(impl_->blas, impl_->workspace, kWorkspaceBytes));
}

CublasWorkspace::~CublasWorkspace() = default;

struct CublasGemm::Impl {
  GemmDesc desc;
  int64_t m = 0;
  bool with_bias = false;
  std::unique_ptr<CublasWorkspace> own;  // unless a shared workspace was given
  cublasLtHandle_t lt = nullptr;
  cublasHandle_t blas = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t layout_b = nullptr, layout_a = nullptr, layout_c = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> algos;
  bool has_gemm_ex = false;  // candidate 0 is cublasGemmEx when true
  int64_t ldb = 0, ldc = 0;
  void* workspace = nullptr;
  int chosen = 0;

  ~Impl() {
    if (layout_c) cublasLtMatrixLayoutDestroy(layout_c);
    if (layout_a) cublasLtMatrixLayoutDestroy(layout_a);
    if (layout_b) cublasLtMatrixLayoutDestroy(layout_b);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

CublasGemm::CublasGemm(const GemmDesc& desc, int64_t m, bool with_bias, int max_lt_algorithms, int64_t ldb,
                       int64_t ldc, const CublasWorkspace* shared)
    : impl_(std::make_unique<Impl>()) {
  validate_gemm_desc(desc);
  FLUX_CHECK_ARG(m >= 1, "flux cublas gemm: M = ", m, " (expected >= 1)");
  FLUX_CHECK_ARG(max_lt_algorithms >= 1 && max_lt_algorithms <= 64, "flux cublas gemm: max_lt_algorithms = ",
                 max_lt_algorithms, " (expected 1..64)");
  Impl& p = *impl_;
  p.desc = desc;
  p.m = m;
  p.with_bias = with_bias;
  const cudaDataType_t t = cuda_type(desc.dtype);            // A, B
  const cudaDataType_t t_out = cuda_type(gemm_out_dtype(desc));  // C, D, bias
  const bool fp8 = desc.dtype == DType::kE4M3;
  const int64_t n = desc.n, k = desc.k;
  const bool nk = desc.layout == WeightLayout::kNK;
  p.ldb = ldb > 0 ? ldb : (nk ? k : n);
  p.ldc = ldc > 0 ? ldc : n;
  FLUX_CHECK_ARG(p.ldb >= (nk ? k : n) && p.ldc >= n && p.ldb % 8 == 0 && p.ldc % 8 == 0, "flux cublas gemm: ldb ",
                 p.ldb, " / ldc ", p.ldc, " (expected multiples of 8, at least the packed strides)");

  if (shared == nullptr) {
    p.own = std::make_unique<CublasWorkspace>();
    shared = p.own.get();
  }
  p.lt = shared->impl().lt;
  p.blas = shared->impl().blas;
  p.workspace = shared->impl().workspace;

  FLUX_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t transa = nk ? CUBLAS_OP_T : CUBLAS_OP_N, transb = CUBLAS_OP_N;
  FLUX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)));
  FLUX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)));
  if (with_bias) {
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    FLUX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    FLUX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &t_out, sizeof(t_out)));
  }
  if (fp8 && desc.scale == ScaleKind::kPerRowCol) {
    // One fp32 scale per row of cuBLAS's A (our B's rows, N) and per column of its B (our A's rows, M):
    // cuBLASLt's outer-vector scaling. Where this cuBLASLt has no such kernel the heuristic returns none
    // and the constructor says so (Unsupported).
    const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    FLUX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof(mode)));
    FLUX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof(mode)));
  }
  if (fp8) {
    // The scale pointers are part of the descriptor; the heuristic wants them set (run() sets the real ones).
    const void* placeholder = p.workspace;
    FLUX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &placeholder,
                                                     sizeof(placeholder)));
    FLUX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &placeholder,
                                                     sizeof(placeholder)));
  }
  // cuBLAS "A" is our B, cuBLAS "B" is our A.
  FLUX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.layout_b, t, nk ? k : n, nk ? n : k, p.ldb));
  FLUX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.layout_a, t, k, m, k));
  FLUX_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.layout_c, t_out, n, m, p.ldc));

  cublasLtMatmulPreference_t pref = nullptr;
  FLUX_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = kWorkspaceBytes;
  cublasStatus_t st =
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(max_lt_algorithms));
  int returned = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(p.lt, p.op, p.layout_b, p.layout_a, p.layout_c, p.layout_c, pref,
                                        max_lt_algorithms, results.data(), &returned);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  FLUX_CUBLAS_CHECK(st);
  for (int i = 0; i < returned; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS) p.algos.push_back(results[i]);
  }
  p.has_gemm_ex = !with_bias && !fp8;  // cublasGemmEx takes no FP8 scales
  if (fp8 && p.algos.empty()) {
    throw Unsupported(detail::cat("flux cublas gemm: cuBLASLt has no FP8 algorithm for m=", m, " n=", n, " k=", k,
                                  " e4m3 -> ", to_string(desc.out_dtype), " scale ", to_string(desc.scale)));
  }
  FLUX_CHECK_ARG(p.has_gemm_ex || !p.algos.empty(), "flux cublas gemm: cuBLASLt has no algorithm for m=", m, " n=", n,
                 " k=", k, " ", to_string(desc.dtype), " layout ", to_string(desc.layout));
}

CublasGemm::~CublasGemm() = default;

int CublasGemm::num_candidates() const { return static_cast<int>(impl_->algos.size()) + (impl_->has_gemm_ex ? 1 : 0); }

std::string CublasGemm::candidate_name(int index) const {
  if (impl_->has_gemm_ex) {
    if (index == 0) return "cublasGemmEx";
    --index;
  }
  FLUX_CHECK_ARG(index >= 0 && index < static_cast<int>(impl_->algos.size()), "flux cublas gemm: candidate ", index);
  // The algorithm's configuration, as cuBLASLt enum values (cublasLtMatmulTile_t, cublasLtMatmulStages_t,
  // cublasLtClusterShape_t), so results say which kernel cuBLAS ran.
  const cublasLtMatmulAlgo_t& algo = impl_->algos[static_cast<size_t>(index)].algo;
  auto attr = [&](cublasLtMatmulAlgoConfigAttributes_t what) {
    // Attributes are 32-bit except a few 16-bit ones (the cluster shape); ask for 32 bits, then 16.
    int32_t value32 = 0;
    uint16_t value16 = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, what, &value32, sizeof(value32), &written) == CUBLAS_STATUS_SUCCESS) {
      return static_cast<int>(value32);
    }
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, what, &value16, sizeof(value16), &written) == CUBLAS_STATUS_SUCCESS) {
      return static_cast<int>(value16);
    }
    return -1;
  };
  return detail::cat("cublasLt#", index, " (algo ", attr(CUBLASLT_ALGO_CONFIG_ID), " tile ",
                     attr(CUBLASLT_ALGO_CONFIG_TILE_ID), " stages ", attr(CUBLASLT_ALGO_CONFIG_STAGES_ID), " splitk ",
                     attr(CUBLASLT_ALGO_CONFIG_SPLITK_NUM), " cluster ", attr(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID), ")");
}

int CublasGemm::chosen() const { return impl_->chosen; }

void CublasGemm::choose(int index) {
  FLUX_CHECK_ARG(index >= 0 && index < num_candidates(), "flux cublas gemm: candidate ", index, " (expected 0..",
                 num_candidates() - 1, ")");
  impl_->chosen = index;
}

void CublasGemm::run(const GemmArgs& args, cudaStream_t stream) const { run_candidate(impl_->chosen, args, stream); }

void CublasGemm::run_candidate(int index, const GemmArgs& args, cudaStream_t stream) const {
  const Impl& p = *impl_;
  FLUX_CHECK_ARG(index >= 0 && index < num_candidates(), "flux cublas gemm: candidate ", index, " (expected 0..",
                 num_candidates() - 1, ")");
  FLUX_CHECK_ARG(args.m == p.m, "flux cublas gemm: planned for M = ", p.m, " but run with M = ", args.m);
  FLUX_CHECK_ARG(args.a && args.b && args.c, "flux cublas gemm: A, B and C must be non-null");
  FLUX_CHECK_ARG((args.bias != nullptr) == p.with_bias, "flux cublas gemm: planned ", p.with_bias ? "with" : "without",
                 " bias but run ", args.bias ? "with" : "without");
  FLUX_CHECK_ARG(args.wait.flags == nullptr && args.publish.mode == PublishMode::kNone,
                 "flux cublas gemm: wait/publish hooks are a GemmPlan feature (expected none here)");
  const float alpha = 1.0f, beta = 0.0f;
  const int64_t n = p.desc.n, k = p.desc.k, m = p.m;
  const bool nk = p.desc.layout == WeightLayout::kNK;
  if (p.has_gemm_ex && index == 0) {
    const cudaDataType_t t = cuda_type(p.desc.dtype);
    FLUX_CUBLAS_CHECK(cublasSetStream(p.blas, stream));
    FLUX_CUBLAS_CHECK(cublasGemmEx(p.blas, nk ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n),
                                   static_cast<int>(m), static_cast<int>(k), &alpha, args.b, t,
                                   static_cast<int>(p.ldb), args.a, t, static_cast<int>(k), &beta, args.c, t,
                                   static_cast<int>(p.ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  const cublasLtMatmulHeuristicResult_t& algo = p.algos[static_cast<size_t>(index - (p.has_gemm_ex ? 1 : 0))];
  if (p.with_bias) {
    const void* bias = args.bias;
    FLUX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  if (p.desc.dtype == DType::kE4M3) {
    FLUX_CHECK_ARG(args.scale_a != nullptr && args.scale_b != nullptr, "flux cublas gemm: e4m3 needs scale_a and scale_b");
    // cuBLAS's A is our B (scale_b), its B our A (scale_a).
    const void* sa = args.scale_b;
    const void* sb = args.scale_a;
    FLUX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof(sa)));
    FLUX_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof(sb)));
  }
  FLUX_CUBLAS_CHECK(cublasLtMatmul(p.lt, p.op, &alpha, args.b, p.layout_b, args.a, p.layout_a, &beta, args.c,
                                   p.layout_c, args.c, p.layout_c, &algo.algo, p.workspace, kWorkspaceBytes, stream));
}

int CublasGemm::tune(const GemmArgs& args, cudaStream_t stream, int reps) {
  FLUX_CHECK_ARG(reps >= 1, "flux cublas gemm: tune reps = ", reps, " (expected >= 1)");
  cudaEvent_t start = nullptr, stop = nullptr;
  FLUX_CUDA_CHECK(cudaEventCreate(&start));
  FLUX_CUDA_CHECK(cudaEventCreate(&stop));
  int best = 0;
  float best_ms = 0.0f;
  try {
    for (int c = 0; c < num_candidates(); ++c) {
      run_candidate(c, args, stream);  // warm-up
      std::vector<float> times;
      for (int r = 0; r < reps; ++r) {
        FLUX_CUDA_CHECK(cudaEventRecord(start, stream));
        run_candidate(c, args, stream);
        FLUX_CUDA_CHECK(cudaEventRecord(stop, stream));
        FLUX_CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        FLUX_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        times.push_back(ms);
      }
      std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
      float median = times[times.size() / 2];
      if (c == 0 || median < best_ms) {
        best = c;
        best_ms = median;
      }
    }
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  impl_->chosen = best;
  return best;
}

}  // namespace flux
