// tools/bench/bench_gemm.h — `flux-bench gemm` (see bench_gemm.cpp).
#pragma once

#include <string>
#include <vector>

namespace flux::bench {
int run_gemm_bench(const std::vector<std::string>& argv, const std::string& command_line);
}
