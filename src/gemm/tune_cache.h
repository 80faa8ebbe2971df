// src/gemm/tune_cache.h — the persisted tuning cache of the GEMM core (issue 9): measured best
// (config, raster, swizzle, split-K factor, stream-K) per problem, written by `flux-bench tune`, read by GemmPlan when the knob
// FLUX_TUNE_CACHE names a file. Host code only (CPU-tested, tests/gemm/test_tune_cache.cpp).
//
// Key: GPU name and SM count (the file's header), dtype, weight layout, N, K, the SMs the GEMM runs on
// (fused ops run it on fewer: GemmOptions::max_sms), and M in buckets (the next power of two >= M).
// A file for another GPU, another SM count or another build (the compiled config table) is ignored,
// with a one-line warning. Format: JSON lines; the first is the header
//   {"flux_tune_cache": 1, "gpu": "NVIDIA H200", "sm_count": 132, "build": "<hex>"}
// then one entry a line:
//   {"dtype": "bf16", "layout": "nk", "n": 4096, "k": 4096, "sms": 132, "m_bucket": 64,
//    "config": "64x256x64_pingpong_c1x2", "raster": "row", "swizzle": 1, "splits": 4, "stream_k": 0, "ms": 0.0123}
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "flux/gemm.h"
#include "flux/tile_order.h"
#include "flux/types.h"

namespace flux::gemm {

struct TuneKey {
  DType dtype = DType::kBF16;
  WeightLayout layout = WeightLayout::kNK;
  int64_t n = 0, k = 0;
  int32_t sms = 0;
  int64_t m_bucket = 0;
  bool operator<(const TuneKey& o) const {
    return std::tie(dtype, layout, n, k, sms, m_bucket) < std::tie(o.dtype, o.layout, o.n, o.k, o.sms, o.m_bucket);
  }
};

struct TuneChoice {
  std::string config;
  Raster raster = Raster::kRowMajor;
  int32_t swizzle = 1;
  double ms = 0.0;  // as measured by flux-bench tune
  int32_t splits = 1;  // split-K factor ("splits" in the file; absent = 1)
  bool stream_k = false;  // stream-K ("stream_k": 1 in the file; absent = 0; only with splits 1)
};

class TuneCache {
 public:
  static int64_t m_bucket(int64_t m);  // the next power of two >= m (m >= 1)
  static std::string build_id();       // identifies the compiled config table (a cache from another is ignored)

  // Reads `path`. On a file for another GPU / SM count / build, returns an empty cache and sets *warning
  // (one line); a missing or malformed file throws InvalidArgument naming the file and line.
  static TuneCache load(const std::string& path, const std::string& gpu, int sm_count, std::string* warning);
  void save(const std::string& path, const std::string& gpu, int sm_count) const;

  void put(const TuneKey& key, const TuneChoice& choice) { entries_[key] = choice; }
  const TuneChoice* find(const TuneKey& key) const;
  size_t size() const { return entries_.size(); }
  // A digest of the entries (plans compare it across ranks: a different cache picks different tiles).
  std::string digest() const;

 private:
  std::map<TuneKey, TuneChoice> entries_;
};

// Replaces the heuristic's choice in *sel by the cached one for M x N x K (config, tiles, raster, swizzle,
// splits, reason); false (sel unchanged) when this build has no config of that name, or the cached split
// is not possible for this config, K and input type.
bool apply_tune_choice(const TuneChoice& choice, int64_t m, int64_t n, int64_t k, const std::string& source,
                       GemmSelection* sel, DType dtype = DType::kBF16);

}  // namespace flux::gemm
