// tools/bench/bench_gemm_ar.h — `flux-bench gemm-ar` (see bench_gemm_ar.cpp).
#pragma once

#include <string>
#include <vector>

namespace flux::bench {
int run_gemm_ar_bench(const std::vector<std::string>& argv, const std::string& command_line);
}
