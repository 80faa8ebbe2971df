// tools/bench/bench_tune.h — `flux-bench tune` (see bench_tune.cpp).
#pragma once

#include <string>
#include <vector>

namespace flux::bench {
int run_tune_bench(const std::vector<std::string>& argv, const std::string& command_line);
}
