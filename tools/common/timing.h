// tools/common/timing.h — side-by-side timing with CUDA events (METHOD.md, DESIGN.md "Measuring").
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace flux::tools {

// One thing to time: run(iteration) enqueues the work on the shared stream (it rotates its own input
// buffers by iteration).
struct TimedRun {
  std::string name;
  std::function<void(int iteration)> run;
};

// Warm-up rounds, then `iters` rounds; each round runs every TimedRun once, in order (A B C A B C ...),
// each between its own pair of events. Returns times[run][iteration] in milliseconds.
std::vector<std::vector<float>> time_interleaved(const std::vector<TimedRun>& runs, cudaStream_t stream, int warmup,
                                                 int iters);

// The same rounds with the host ahead of the GPU: a GPU delay (tools::gpu_delay) long enough for the host
// to enqueue every round is queued first, so each event pair brackets GPU work only, even for kernels
// shorter than their host enqueue. If host_us is given, it receives each run's median host time per
// call (wall clock of run(), microseconds): the enqueue cost the first figure leaves out.
std::vector<std::vector<float>> time_interleaved_host_ahead(const std::vector<TimedRun>& runs, cudaStream_t stream,
                                                            int warmup, int iters, std::vector<double>* host_us);

// How many input sets to rotate through so that no call finds its inputs in L2: enough sets of
// `set_bytes` to exceed 2 x L2, at least 2, at most `max_sets` (memory).
inline int rotating_sets(int64_t set_bytes, int64_t l2_bytes, int max_sets) {
  const int64_t need = (2 * l2_bytes + set_bytes - 1) / set_bytes + 1;
  return static_cast<int>(need < 2 ? 2 : (need > max_sets ? max_sets : need));
}
double percentile(std::vector<float> values, double p);  // p in [0, 100], linear interpolation
inline double median(const std::vector<float>& values) { return percentile(values, 50.0); }

// "2026-12-01T08:05:13Z"
std::string utc_now_iso8601();

}  // namespace flux::tools
