// tools/bench/bench_ranks.h — what the multi-rank benchmarks share.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "flux/gemm.h"
#include "flux/runtime.h"
#include "flux/types.h"
#include "tools/bench/bench_args.h"
#include "tools/common/json.h"

namespace flux::bench {

// The defaults of one fused-op benchmark (its subcommand name, its suite, its timing).
struct FusedBenchDefaults {
  const char* op;                 // "gemm-rs", "ag-gemm", "gemm-ar": the subcommand, in messages
  std::vector<int64_t> suite_ms;  // the default suite: these M at suite_n x suite_k
  int64_t suite_n, suite_k;
  int warmup, iters;              // --warmup / --iters defaults
  bool fp8_options;               // --scale and --out-dtype accepted (the ops' FP8 rows, bench_operands.h)
};

// What gemm-rs, ag-gemm and gemm-ar share: their options (--dtypes, --layout, --shapes, --warmup, --iters >= 20,
// --json, --check-rows, --no-check, and --scale / --out-dtype where FP8 rows are run), the communicator of the
// ranks flux-run started, the device's limits, rank 0's JSON file and a non-blocking stream (destroyed with it).
struct FusedBench {
  FusedBench(const std::vector<std::string>& argv, const FusedBenchDefaults& defaults);
  ~FusedBench();
  FusedBench(const FusedBench&) = delete;
  FusedBench& operator=(const FusedBench&) = delete;

  // The fields every row of these benches ends with: same_gpu, mps, iters, gpu, date, command.
  void add_run_fields(tools::JsonLine& line, const std::string& command_line) const;
  // The stream destroyed, its error checked (the destructor does it too, where an exception left it).
  void finish();
  // Rank 0: "flux-bench OP: W=.. on GPU (how the ranks hold GPUs, MPS)" and, without NCCL, `without_nccl`.
  void print_banner(const char* without_nccl) const;

  const FusedBenchDefaults defaults;
  Args args;
  Communicator comm;
  int w, r;                     // world size, this rank
  std::vector<DType> dtypes;    // --dtypes, default bf16,fp16
  WeightLayout layout;          // --layout, default nk
  std::vector<Shape> shapes;    // --shapes, default the suite
  int warmup, iters, check_rows;
  bool check;                   // not --no-check
  DeviceLimits limits;
  bool nccl, mps;
  std::string date;
  std::unique_ptr<std::ofstream> json;  // rank 0 with --json only
  cudaStream_t stream = nullptr;
};

// The largest of every rank's `mine` (a row reports the slowest rank; collective).
double max_over_ranks(Communicator& comm, double mine, const std::string& label);

}  // namespace flux::bench
