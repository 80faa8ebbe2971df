// tools/bench/bench_p2p.h — `flux-bench p2p` (see bench_p2p.cu).
#pragma once

#include <string>
#include <vector>

namespace flux::bench {
int run_p2p_bench(const std::vector<std::string>& argv, const std::string& command_line);
}
