// tests/support/process.h — run a program with extra environment and capture its output (bounded).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace flux::testing {

struct ProcessResult {
  int exit_code = -1;      // 128 + signal for a signal; -2 when the timeout killed it
  std::string output;      // stdout and stderr, interleaved
  double seconds = 0.0;
};

// Starts `argv` with `env` added to this process's environment; kills it after timeout_s.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& env, double timeout_s);

// Starts several processes at once (each with its own env) and waits for all of them.
std::vector<ProcessResult> run_processes(const std::vector<std::vector<std::string>>& argvs,
                                         const std::vector<std::vector<std::pair<std::string, std::string>>>& envs,
                                         double timeout_s);

// Runs `probe mode` as a `world`-rank job under flux-run (with --mps when asked; the test skips when
// nvidia-cuda-mps-control is missing) and expects exit 0 and "<marker> PASSED: rank r of W" from every
// rank (gtest assertions; use inside a TEST). A mode "<mode>_chaos" runs the probe's <mode> with
// FLUX_CHAOS_SEED set (chaos mode).
void run_probe_job(const std::string& probe, int world, bool mps, const std::string& mode, const std::string& marker,
                   const std::vector<std::pair<std::string, std::string>>& env);

// A loopback TCP port that was free a moment ago (bind to port 0, read it back, close).
int free_tcp_port();

// A binary that sits next to the running test executable (tests and tools are carried together to
// GPU machines), else `fallback` (the build-tree path).
std::string sibling_binary(const std::string& name, const std::string& fallback);

}  // namespace flux::testing
