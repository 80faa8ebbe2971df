// flux/baseline/cublas_gemm.h — the vendor GEMM behind the same shapes as flux::GemmPlan.
//
// C [M, N] = A [M, K] · op(B) (+ bias) with cuBLAS: candidates are cublasGemmEx (default algorithm;
// only without bias) and cuBLASLt's top heuristic algorithms (up to 8). tune() times every candidate
// on the caller's buffers and keeps the fastest, which is how DESIGN.md defines "the cuBLAS
// reference" (the first Lt heuristic alone was up to 12% slower than torch.matmul on some shapes).
// It is also the GEMM of the ops' unfused fallback paths. Hooks (wait/publish) are not supported:
// GemmArgs with them set are rejected.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "flux/gemm.h"

namespace flux {

// cuBLAS / cuBLASLt handles and a workspace that CublasGemm plans share. Making one allocates device
// memory; a CublasGemm made on a shared workspace allocates none, so it can be made while a stream is
// being captured into a CUDA graph. Plans that run concurrently (on different streams) need different
// workspaces: a fused op keeps one per stream, made at plan build.
class CublasWorkspace {
 public:
  CublasWorkspace();
  ~CublasWorkspace();
  CublasWorkspace(const CublasWorkspace&) = delete;
  CublasWorkspace& operator=(const CublasWorkspace&) = delete;
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class CublasGemm {
 public:
  // Plans for exactly (m, desc.n, desc.k) with or without bias; throws InvalidArgument on bad shapes,
  // CudaError when cuBLAS has no algorithm.
  // ldb / ldc: row strides (elements) of B and C when they are column blocks of wider matrices
  // (0: packed). A stays packed. `shared`: run on these handles and workspace (kept alive by the
  // caller) instead of making its own.
  CublasGemm(const GemmDesc& desc, int64_t m, bool with_bias, int max_lt_algorithms = 8, int64_t ldb = 0,
             int64_t ldc = 0, const CublasWorkspace* shared = nullptr);
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  int num_candidates() const;
  std::string candidate_name(int index) const;
  int chosen() const;
  void choose(int index);

  // Times each candidate (median of `reps` after a warm-up, CUDA events on `stream`), keeps the
  // fastest and returns its index. Synchronizes `stream`.
  int tune(const GemmArgs& args, cudaStream_t stream, int reps = 5);

  void run(const GemmArgs& args, cudaStream_t stream) const;                // the chosen candidate
  void run_candidate(int index, const GemmArgs& args, cudaStream_t stream) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flux
