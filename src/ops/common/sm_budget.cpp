// src/ops/common/sm_budget.cpp — see sm_budget.h.
#include "src/ops/common/sm_budget.h"

#include <algorithm>

namespace flux::ops {

SmSplit fused_sm_split(int sm_count, int ranks_on_gpu, int helper_sms) {
  const int share = std::max(sm_count / std::max(ranks_on_gpu, 1), 4);
  SmSplit s;
  s.helper_sms = std::clamp(helper_sms, 1, std::max(share / 4, 1));
  s.gemm_sms = std::max(share - s.helper_sms, 2);
  return s;
}

int ranks_on_gpu(const std::vector<std::string>& uuids, int rank) {
  if (uuids.empty()) return 1;
  int n = 0;
  for (const std::string& u : uuids) n += u == uuids[static_cast<size_t>(rank)];
  return std::max(n, 1);
}

}  // namespace flux::ops
