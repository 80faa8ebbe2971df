// tools/bench/bench_ranks.cpp — see bench_ranks.h.
#include "tools/bench/bench_ranks.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "src/common/check.h"
#include "tools/common/timing.h"

namespace flux::bench {

namespace {

std::set<std::string> fused_value_options(bool fp8) {
  std::set<std::string> o = {"--dtypes", "--layout", "--shapes", "--warmup", "--iters", "--json", "--check-rows"};
  if (fp8) o.insert({"--scale", "--out-dtype"});
  return o;
}

}  // namespace

FusedBench::FusedBench(const std::vector<std::string>& argv, const FusedBenchDefaults& d)
    : defaults(d), args(argv, fused_value_options(d.fp8_options), {"--no-check"}) {
  w = comm.world_size();
  r = comm.rank();
  for (const std::string& name : args.get_list("--dtypes", "bf16,fp16")) dtypes.push_back(parse_dtype(name));
  layout = parse_weight_layout(args.get("--layout", "nk"));
  if (args.get("--shapes", "").empty()) {
    for (int64_t m : d.suite_ms) shapes.push_back({m, d.suite_n, d.suite_k, 0});
  } else {
    for (const std::string& s : args.get_list("--shapes", "")) shapes.push_back(parse_shape(s));
  }
  warmup = static_cast<int>(args.get_int("--warmup", d.warmup));
  iters = static_cast<int>(args.get_int("--iters", d.iters));
  check_rows = static_cast<int>(args.get_int("--check-rows", 16));
  check = !args.flag("--no-check");
  FLUX_CHECK_ARG(iters >= 20, "flux-bench ", d.op, ": --iters ", iters, " (the project reports medians of >= 20)");
  limits = query_device_limits(comm.device());
  nccl = comm.nccl_available();
  mps = std::getenv("CUDA_MPS_PIPE_DIRECTORY") != nullptr;
  date = tools::utc_now_iso8601();
  if (r == 0 && !args.get("--json", "").empty()) {
    json = std::make_unique<std::ofstream>(args.get("--json", ""), std::ios::out | std::ios::trunc);
    FLUX_CHECK_ARG(json->good(), "flux-bench ", d.op, ": cannot write --json ", args.get("--json", ""));
  }
  FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
}

void FusedBench::finish() {
  cudaStream_t s = stream;
  stream = nullptr;
  FLUX_CUDA_CHECK(cudaStreamDestroy(s));
}

FusedBench::~FusedBench() {
  if (stream == nullptr) return;  // finish() ran
  // Left by an exception: a destructor cannot throw, so a failure is said, not lost.
  const cudaError_t e = cudaStreamDestroy(stream);
  if (e != cudaSuccess) {
    std::fprintf(stderr, "flux-bench %s: cudaStreamDestroy: %s\n", defaults.op, cudaGetErrorString(e));
  }
}

void FusedBench::add_run_fields(tools::JsonLine& line, const std::string& command_line) const {
  line.add("same_gpu", comm.shares_gpu()).add("mps", mps).add("iters", iters).add("gpu", limits.name).add("date", date)
      .add("command", command_line);
}

void FusedBench::print_banner(const char* without_nccl) const {
  if (r != 0) return;
  std::printf("flux-bench %s: W=%d on %s (%s%s)%s\n", defaults.op, w, limits.name.c_str(),
              comm.shares_gpu() ? "ranks share a GPU" : "one GPU per rank", mps ? ", MPS" : "",
              nccl ? "" : without_nccl);
}

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
