// tests/support/cpu_support.h — what the CPU tests of the planning code share: a modelled H200 (no GPU is
// queried) and occupancy vectors that leave only some configs with kernels.
#pragma once

#include <vector>

#include "flux/gemm.h"

namespace flux::testing {

// The H200's figures the heuristics read: 132 SMs, sm_90, 227 KiB of opt-in shared memory, 50 MiB of L2.
inline DeviceLimits h200_limits() {
  DeviceLimits d;
  d.cc_major = 9;
  d.sm_count = 132;
  d.smem_per_block_optin = 227 * 1024;
  d.l2_bytes = 50 * 1024 * 1024;
  d.name = "NVIDIA H200 (modelled)";
  return d;
}

// max_active_clusters for select_gemm_config with kernels for the (unswapped) ping-pong configs only: 0 for
// those (sm_count / cluster size), -1 (no kernel) for every other config.
inline std::vector<int> only_pingpong_clusters() {
  std::vector<int> clusters;
  for (const GemmConfigInfo& c : gemm_configs()) clusters.push_back(c.pingpong && !c.swap_ab ? 0 : -1);
  return clusters;
}

}  // namespace flux::testing
