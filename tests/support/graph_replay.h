// tests/support/graph_replay.h — drive an op's run() through CUDA-graph capture and replay, the way a
// serving stack does: capture one call on one stream (global capture mode: any call that is unsafe
// during capture fails), then replay it on another stream many times with the inputs rewritten in
// place before each replay, mixing in eager calls of the same plan, and check chosen steps.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "src/common/check.h"

namespace flux::testing {

// `count` pseudo-random steps in [0, steps) from `seed` (the same on every rank), and the last step.
inline std::vector<int> check_steps(uint64_t seed, int count, int steps) {
  std::mt19937_64 rng(seed);
  std::vector<int> at;
  for (int i = 0; i < count; ++i) at.push_back(static_cast<int>(rng() % uint64_t(steps)));
  at.push_back(steps - 1);
  return at;
}

// refill(step, stream): rewrite the inputs in place (and poison the output on checked steps);
// run(stream): one call of the op; check(step): after the replay stream is synchronized.
// Every `eager_every`-th step (0: never) is an eager run() instead of a replay. Returns the steps checked.
template <class Refill, class Run, class Check>
int capture_and_replay(cudaStream_t capture, cudaStream_t replay, int steps, const std::vector<int>& check_at,
                       int eager_every, Refill&& refill, Run&& run, Check&& check) {
  refill(-1, capture);
  FLUX_CUDA_CHECK(cudaStreamSynchronize(capture));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  FLUX_CUDA_CHECK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal));
  try {
    run(capture);
  } catch (...) {
    cudaGraph_t discarded = nullptr;
    (void)cudaStreamEndCapture(capture, &discarded);
    if (discarded) cudaGraphDestroy(discarded);
    (void)cudaGetLastError();
    throw;
  }
  FLUX_CUDA_CHECK(cudaStreamEndCapture(capture, &graph));
  FLUX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  int checked = 0;
  for (int step = 0; step < steps; ++step) {
    refill(step, replay);
    if (eager_every > 0 && step % eager_every == eager_every - 1) {
      run(replay);
    } else {
      FLUX_CUDA_CHECK(cudaGraphLaunch(exec, replay));
    }
    if (std::find(check_at.begin(), check_at.end(), step) != check_at.end()) {
      FLUX_CUDA_CHECK(cudaStreamSynchronize(replay));
      check(step);
      ++checked;
    }
  }
  FLUX_CUDA_CHECK(cudaStreamSynchronize(replay));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return checked;
}

}  // namespace flux::testing
