// tools/bench/bench_gemm_rs.h — `flux-bench gemm-rs` (see bench_gemm_rs.cpp).
#pragma once

#include <string>
#include <vector>

namespace flux::bench {
int run_gemm_rs_bench(const std::vector<std::string>& argv, const std::string& command_line);
}
