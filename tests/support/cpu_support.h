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
  d.hbm_bytes_per_s = 4'800'000'000'000;  // HBM3e, 4.8 TB/s
  return d;
}

// The H100 SXM as query_device_limits reads it: the H200's SMs, shared memory and L2, 3.35 TB/s of HBM3
// (2619 MHz x 2 x 5120 bits).
inline DeviceLimits h100_limits() {
  DeviceLimits d = h200_limits();
  d.name = "NVIDIA H100 80GB HBM3 (modelled)";
  d.hbm_bytes_per_s = int64_t(2'619'000) * 1000 * 2 * (5120 / 8);
  return d;
}

// max_active_clusters for select_gemm_config with kernels for the (unswapped) ping-pong configs only: 0 for
// those (sm_count / cluster size), -1 (no kernel) for every other config.
inline std::vector<int> only_pingpong_clusters() {
  std::vector<int> clusters;
  for (const GemmConfigInfo& c : gemm_configs()) clusters.push_back(c.pingpong && !c.swap_ab ? 0 : -1);
  return clusters;
}

// max_active_clusters as a GemmPlan measures it on the H200: the mma skinny configs at 2 CTAs per SM (4 stages of
// ~25 KB of shared memory each; "waves of 264 clusters" in the H200 runs' selection reasons), the GEMV at 4 (64
// registers per thread, no shared memory: gemv_kernel.cuh), every other config 0 (sm_count / cluster size).
// Without it select_gemm_config counts kSkinnyMaxCtasPerSm per SM.
inline std::vector<int> h200_measured_clusters() {
  std::vector<int> clusters;
  for (const GemmConfigInfo& c : gemm_configs()) {
    clusters.push_back(c.gemv ? 4 * h200_limits().sm_count : c.skinny ? 2 * h200_limits().sm_count : 0);
  }
  return clusters;
}

}  // namespace flux::testing
