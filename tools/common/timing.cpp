// tools/common/timing.cpp — see timing.h.
#include "tools/common/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "src/common/check.h"
#include "tools/common/device_tools.h"

namespace flux::tools {

std::vector<std::vector<float>> time_interleaved(const std::vector<TimedRun>& runs, cudaStream_t stream, int warmup,
                                                 int iters) {
  FLUX_CHECK_ARG(iters >= 1 && warmup >= 0, "time_interleaved: iters ", iters, ", warmup ", warmup);
  for (int w = 0; w < warmup; ++w) {
    for (const TimedRun& r : runs) r.run(w);
  }
  const size_t n = runs.size();
  std::vector<cudaEvent_t> events(2 * n * static_cast<size_t>(iters), nullptr);
  for (cudaEvent_t& e : events) FLUX_CUDA_CHECK(cudaEventCreate(&e));
  std::vector<std::vector<float>> times(n, std::vector<float>(static_cast<size_t>(iters), 0.0f));
  try {
    for (int it = 0; it < iters; ++it) {
      for (size_t r = 0; r < n; ++r) {
        size_t e = 2 * (static_cast<size_t>(it) * n + r);
        FLUX_CUDA_CHECK(cudaEventRecord(events[e], stream));
        runs[r].run(warmup + it);
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
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    throw;
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  return times;
}

std::vector<std::vector<float>> time_interleaved_host_ahead(const std::vector<TimedRun>& runs, cudaStream_t stream,
                                                            int warmup, int iters, std::vector<double>* host_us) {
  FLUX_CHECK_ARG(iters >= 1 && warmup >= 0, "time_interleaved_host_ahead: iters ", iters, ", warmup ", warmup);
  for (int w = 0; w < warmup; ++w) {
    for (const TimedRun& r : runs) r.run(w);
  }
  FLUX_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Host cost per call, measured on its own (the GPU is idle or busy; enqueue does not wait for it
  // while the queue has room): one more round per iteration, not timed on the GPU.
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
  std::vector<cudaEvent_t> events(2 * n * static_cast<size_t>(iters), nullptr);
  for (cudaEvent_t& e : events) FLUX_CUDA_CHECK(cudaEventCreate(&e));
  std::vector<std::vector<float>> times(n, std::vector<float>(static_cast<size_t>(iters), 0.0f));
  try {
    gpu_delay(lead_ns, stream);
    for (int it = 0; it < iters; ++it) {
      for (size_t r = 0; r < n; ++r) {
        size_t e = 2 * (static_cast<size_t>(it) * n + r);
        FLUX_CUDA_CHECK(cudaEventRecord(events[e], stream));
        runs[r].run(warmup + iters + it);
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
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    throw;
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  return times;
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
