// tools/bench/bench_ranks.cpp — see bench_ranks.h.
#include "tools/bench/bench_ranks.h"

#include <algorithm>
#include <cstring>

namespace flux::bench {

double max_over_ranks(Communicator& comm, double mine, const std::string& label) {
  auto all = comm.all_gather(std::string(reinterpret_cast<const char*>(&mine), sizeof(mine)), label);
  double worst = 0;
  for (const auto& blob : all) {
    double v = 0;
    std::memcpy(&v, blob.data(), sizeof(v));
    worst = std::max(worst, v);
  }
  return worst;
}

}  // namespace flux::bench
