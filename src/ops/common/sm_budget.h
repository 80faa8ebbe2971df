// src/ops/common/sm_budget.h — the one SM-budget policy of the fused ops (GPU-free, CPU-tested).
//
// Ranks that share a GPU split its SMs evenly: each rank's fused GEMM and helper kernel (GEMM+RS's
// reduction, AG+GEMM's gather) fit in its share, so no rank's waiting kernels can starve another rank's.
// Within a share the helper gets the SMs asked for (at most a quarter of the share) and the GEMM core
// the rest. With one rank per GPU the share is the whole GPU.
#pragma once

#include <string>
#include <vector>

namespace flux::ops {

struct SmSplit {
  int gemm_sms = 0;
  int helper_sms = 0;
};

SmSplit fused_sm_split(int sm_count, int ranks_on_gpu, int helper_sms);

// How many ranks report `uuids[rank]` (ranks on this rank's GPU, this one included).
int ranks_on_gpu(const std::vector<std::string>& uuids, int rank);

}  // namespace flux::ops
