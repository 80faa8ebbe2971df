// src/ops/common/fused_rule.h — the fused-or-sequential rule of every fused op, written once (GPU-free,
// CPU-tested through the ops' choose_* functions).
//
// Reasons: a small per-rank GEMM (under 2 GFLOP: ~3 us of H200 tensor time) cannot hide anything: a fused
// path adds a device barrier, a second kernel and SMs taken from the GEMM, each a few microseconds, so the
// plain sequential path wins; above it the fused path hides its communication behind the GEMM.
// NOTE: the threshold is from that cost argument, not from NVLink measurements; `flux-bench model`
// (src/ops/common/overlap_model.h) predicts each path from measured rates and is what a node with several
// GPUs will check before it replaces this rule.
#pragma once

#include <cstdint>
#include <string>

namespace flux::ops {

constexpr double kFusedMinGflop = 2.0;

// True when the fused path pays for a per-rank GEMM of m x n x k at W >= 2; `reason` (if not null) gets
// the rule's words, ending with what the fused path would have had to hide (`hides`).
bool fused_pays(int64_t m, int64_t n, int64_t k, const char* hides, std::string* reason);

}  // namespace flux::ops
