// tools/common/timing.cpp — see timing.h.
#include "tools/common/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "src/common/check.h"
#include "tools/common/device_tools.h"

namespace flux::tools {

namespace {

// `iters` rounds of every run between its own pair of events, iteration numbers from `first`; with
// lead_ns > 0 a GPU delay of that long is queued first (the host gets ahead of the GPU).
std::vector<std::vector<float>> timed_rounds(const std::vector<TimedRun>& runs, cudaStream_t stream, int first,
                                             int iters, uint64_t lead_ns) {
  const size_t n = runs.size();
  std::vector<cudaEvent_t> events(2 * n * static_cast<size_t>(iters), nullptr);
  std::vector<std::vector<float>> times(n, std::vector<float>(static_cast<size_t>(iters), 0.0f));
  try {
    for (cudaEvent_t& e : events) FLUX_CUDA_CHECK(cudaEventCreate(&e));
    if (lead_ns > 0) gpu_delay(lead_ns, stream);
    for (int it = 0; it < iters; ++it) {
      for (size_t r = 0; r < n; ++r) {
        size_t e = 2 * (static_cast<size_t>(it) * n + r);
        FLUX_CUDA_CHECK(cudaEventRecord(events[e], stream));
        runs[r].run(first + it);
        FLUX_CUDA_CHECK(cudaEventRecord(events[e + 1], stream));
      }
    }
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int it = 0; it < iters; ++it) {
      for (size_t r = 0; r < n; ++r) {
        size_t e = 2 * (static_cast<size_t>(it) * n + r);
        FLUX_CUDA_CHECK(cudaEventElapsedTime(&times[r][static_cast<size_t>(it)], events[e], events[e + 1]));
      }
    }
  } catch (...) {
    for (cudaEvent_t e : events) {
      if (e) cudaEventDestroy(e);
    }
    throw;
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  return times;
}

}  // namespace

std::vector<std::vector<float>> time_interleaved(const std::vector<TimedRun>& runs, cudaStream_t stream, int warmup,
                                                 int iters) {
  FLUX_CHECK_ARG(iters >= 1 && warmup >= 0, "time_interleaved: iters ", iters, ", warmup ", warmup);
  for (int w = 0; w < warmup; ++w) {
    for (const TimedRun& r : runs) r.run(w);
  }
  return timed_rounds(runs, stream, warmup, iters, 0);
}

std::vector<std::vector<float>> time_interleaved_host_ahead(const std::vector<TimedRun>& runs, cudaStream_t stream,
                                                            int warmup, int iters, std::vector<double>* host_us) {
  FLUX_CHECK_ARG(iters >= 1 && warmup >= 0, "time_interleaved_host_ahead: iters ", iters, ", warmup ", warmup);
  for (int w = 0; w < warmup; ++w) {
    for (const TimedRun& r : runs) r.run(w);
  }
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Host cost per call, measured on its own (enqueue does not wait for the GPU while the queue has
  // room): one more round per iteration, not timed on the GPU.
  const size_t n = runs.size();
  std::vector<std::vector<float>> host(n, std::vector<float>(static_cast<size_t>(iters), 0.0f));
  for (int it = 0; it < iters; ++it) {
    for (size_t r = 0; r < n; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      runs[r].run(warmup + it);
      host[r][static_cast<size_t>(it)] =
          static_cast<float>(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  if (host_us) {
    host_us->assign(n, 0.0);
    for (size_t r = 0; r < n; ++r) (*host_us)[r] = median(host[r]);
  }
  double total_us = 0;
  for (size_t r = 0; r < n; ++r) total_us += median(host[r]) + 10.0;  // + two event records
  const uint64_t lead_ns = static_cast<uint64_t>(std::max(2000.0, 1.5 * total_us * iters) * 1000.0);
  return timed_rounds(runs, stream, warmup + iters, iters, lead_ns);
}

double percentile(std::vector<float> values, double p) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  double pos = (p / 100.0) * static_cast<double>(values.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, values.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return values[lo] * (1.0 - frac) + values[hi] * frac;
}

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace flux::tools
