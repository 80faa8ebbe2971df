// src/common/knobs.cpp — the knob registry (see flux/knobs.h).
#include "flux/knobs.h"

#include <cerrno>
#include <cstdlib>

#include "src/common/check.h"

namespace flux::knobs {

const std::vector<Knob>& all() {
  static const std::vector<Knob> knobs = {
      {"FLUX_WAIT_TIMEOUT_MS", "10000",
       "bound, in milliseconds, on every device-side wait (GEMM wait-before-load, signal, barrier and stream-ordered "
       "waits), counted from when the GPU reaches it; on expiry the kernel stops waiting, the communicator is "
       "poisoned on every rank and the host gets flux::TimeoutError naming what was awaited"},
      {"FLUX_GEMM_CONFIG", "auto",
       "force one GEMM core config by name (see flux-bench gemm --list-configs), or 'auto' for the heuristic"},
      {"FLUX_GEMM_RASTER", "auto", "tile raster of the GEMM core: 'row' (N fastest), 'col' (M fastest) or 'auto'"},
      {"FLUX_GEMM_SPLIT_K", "0",
       "split-K factor of the GEMM core: 0 = the heuristic decides, 1 = never split, 2..16 = always that many slices "
       "of K (K / S must be a multiple of 8; split-capable configs only)"},
      {"FLUX_GEMM_STREAM_K", "off",
       "stream-K of the GEMM core's cooperative configs (the last waves' tiles cut into k ranges, summed in a fixed "
       "order in the kernel): off = never (default: on the H200 the heuristic's stream-K choices ran 0.9% slower than "
       "its whole-tile ones on the tuning half, 2026-12-03), auto = where the time model predicts it faster, on = "
       "wherever it applies"},
      {"FLUX_GEMM_SWIZZLE", "0", "band width of the GEMM core's tile order in cluster units (1, 2, 4, 8, 16); 0 = auto"},
      {"FLUX_TUNE_CACHE", "",
       "a tuning cache written by flux-bench tune: its measured config / raster / swizzle per (dtype, layout, N, K, "
       "SMs, M bucket) override the heuristic; a cache for another GPU, SM count or build is ignored with a warning; "
       "empty = none"},
      {"FLUX_RDZV_TOKEN", "",
       "the job's rendezvous secret, the same on every rank (flux-run generates one); a peer without it is rejected"},
      {"FLUX_RDZV_TIMEOUT_MS", "120000",
       "bound, in milliseconds, on the rendezvous, on every host collective and on every NCCL call"},
      {"FLUX_RDZV_LISTEN_FD", "-1",
       "rank 0 only: a file descriptor of a TCP socket already bound to MASTER_PORT and listening, inherited from the "
       "launcher (flux-run sets it, so the port is never free between the launcher choosing it and rank 0 using it); "
       "-1 = rank 0 binds MASTER_PORT itself"},
      {"FLUX_DEVICE", "-1", "GPU ordinal of this rank; -1 = LOCAL_RANK modulo the number of visible GPUs"},
      {"FLUX_GEMM_RS_IMPL", "auto", "GEMM+RS path: auto (the rule), fused, sequential or decomposed"},
      {"FLUX_GEMM_AR_PATH", "auto", "GEMM+AR path: auto (the rule), one_shot, two_shot, rs_ag, sequential or decomposed"},
      {"FLUX_GEMM_RS_REDUCE_SMS", "8", "SMs given to the fused GEMM+RS reduction kernel (the GEMM gets the rest)"},
      {"FLUX_AG_GEMM_IMPL", "auto", "AG+GEMM path: auto (the rule), fused, fused_ce, sequential or decomposed"},
      {"FLUX_AG_GEMM_GATHER_SMS", "8",
       "SMs given to the fused AG+GEMM gather kernel (at most a quarter of a rank's share when ranks share a GPU)"},
      {"FLUX_CHAOS_SEED", "0",
       "chaos mode for tests: a non-zero seed makes the fused ops' publish, gather, reduction, barrier and wait "
       "steps take random delays (up to 20 us each, a quarter of the steps), so that orderings a single fast GPU "
       "never produces show up; 0 = off"},
      {"FLUX_GEMM_RS_COL_BANDS", "0", "column bands of the fused GEMM+RS tile order; 0 = auto (a band of B and of the "
                                      "accumulator fit in half the L2)"},
  };
  return knobs;
}

namespace {
const Knob& find(const std::string& name) {
  for (const Knob& knob : all()) {
    if (name == knob.name) return knob;
  }
  throw InvalidArgument(detail::cat("flux::knobs: '", name, "' is not a registered knob"));
}
}  // namespace

std::string get_string(const std::string& name) {
  const Knob& knob = find(name);
  const char* value = std::getenv(knob.name);
  if (value == nullptr || *value == '\0') return knob.default_value;
  return value;
}

int64_t get_int(const std::string& name) {
  std::string text = get_string(name);
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  FLUX_CHECK_ARG(errno == 0 && end != text.c_str() && *end == '\0', "flux: knob ", name, "='", text,
                 "' is not an integer (expected a whole number, default ", find(name).default_value, ")");
  return static_cast<int64_t>(value);
}

const std::vector<RetiredKnob>& retired() {
  static const std::vector<RetiredKnob> knobs = {
      {"FLUX_GEMM_FP8_PROMOTION",
       "FP8 GEMMs now add the tensor cores' partial sums into the fp32 accumulators after every k-tile (4 MMAs of "
       "K = 32), one k-tile behind the MMAs so the MMA queue never drains (src/gemm/kernel/lagged_fp8_mainloop.cuh): "
       "the accuracy of the old interval 4 at more than the speed of the old default 16; there is no interval to set"},
  };
  return knobs;
}

void reject_retired() {
  for (const RetiredKnob& knob : retired()) {
    const char* value = std::getenv(knob.name);
    FLUX_CHECK_ARG(value == nullptr || *value == '\0', "flux: knob ", knob.name, "='", value == nullptr ? "" : value,
                   "' was retired and is no longer read: ", knob.replaced_by, " (expected it unset)");
  }
}

}  // namespace flux::knobs
