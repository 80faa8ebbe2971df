// tools/bench/bench_ag_gemm.h — `flux-bench ag-gemm` (see bench_ag_gemm.cpp).
#pragma once

#include <string>
#include <vector>

namespace flux::bench {
int run_ag_gemm_bench(const std::vector<std::string>& argv, const std::string& command_line);
}
