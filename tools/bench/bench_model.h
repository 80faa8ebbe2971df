// tools/bench/bench_model.h — `flux-bench model` (see bench_model.cpp).
#pragma once

#include <string>
#include <vector>

namespace flux::bench {
int run_model_bench(const std::vector<std::string>& argv, const std::string& command_line);
}
