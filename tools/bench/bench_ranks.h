// tools/bench/bench_ranks.h — what the multi-rank benchmarks share.
#pragma once

#include <string>

#include "flux/runtime.h"

namespace flux::bench {

// The largest of every rank's `mine` (a row reports the slowest rank; collective).
double max_over_ranks(Communicator& comm, double mine, const std::string& label);

}  // namespace flux::bench
