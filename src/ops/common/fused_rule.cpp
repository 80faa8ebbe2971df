// src/ops/common/fused_rule.cpp — see fused_rule.h.
#include "src/ops/common/fused_rule.h"

#include "src/common/check.h"

namespace flux::ops {

bool fused_pays(int64_t m, int64_t n, int64_t k, const char* hides, std::string* reason) {
  const double gflop = 2.0 * double(m) * double(n) * double(k) / 1e9;
  const bool fused = gflop >= kFusedMinGflop;
  if (reason != nullptr) {
    *reason = fused ? detail::cat("rule: fused, the per-rank GEMM is ", gflop, " GFLOP (>= ", kFusedMinGflop, ")")
                    : detail::cat("rule: sequential, the per-rank GEMM is ", gflop, " GFLOP (< ", kFusedMinGflop,
                                  "): too short to hide ", hides);
  }
  return fused;
}

}  // namespace flux::ops
