// tools/bench/flux_bench.cpp — the benchmark CLI: `flux-bench <subcommand> [options]`. Thin: parses the
// subcommand and reports errors; each subcommand lives in its own bench_*.cpp.
#include <cstdio>
#include <string>
#include <vector>

#include "flux/error.h"
#include "tools/bench/bench_ag_gemm.h"
#include "tools/bench/bench_gemm_ar.h"
#include "tools/bench/bench_gemm.h"
#include "tools/bench/bench_gemm_rs.h"
#include "tools/bench/bench_model.h"
#include "tools/bench/bench_p2p.h"
#include "tools/bench/bench_tune.h"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: flux-bench <subcommand> [options]\n"
               "  gemm   the GEMM core vs cuBLAS on the per-rank shapes of DESIGN.md\n"
               "         [--dtypes bf16,fp16] [--layout nk|kn] [--shapes MxNxK,...] [--warmup 5] [--iters 30]\n"
               "         [--json FILE] [--bias] [--no-check] [--check-rows 64] [--sweep] [--sweep-iters 20]\n"
               "         [--attribution] (each hook alone)\n"
               "         [--corpus tune|test|all] [--corpus-file bench/corpus/gemm_corpus.csv] [--corpus-every 1] [--corpus-max-m 0] [--corpus-min-m 1]\n"
               "         [--list-configs]\n"
               "  tune   measure every GEMM core candidate per shape and write a tuning cache (FLUX_TUNE_CACHE)\n"
               "         --out FILE [--corpus tune|...] [--shapes MxNxK,...] [--dtypes bf16,fp16] [--layout nk|kn]\n"
               "         [--max-sms 0[,124,...]] [--iters 10] [--warmup 2] [--merge]\n"
               "  model  the overlap model: each fused-op path's predicted time per shape and TP, from the GEMM core\n"
               "         and pull-kernel rates measured here and a link model\n"
               "         [--shapes MxNxK,... --tp 2,4,8] [--dtypes bf16] [--side-sms 8] [--link-gbps 450]\n"
               "         [--link-latency-us 3] [--collective-gbps 0 (= 80%% of the link)] [--fixed-us 5] [--iters 20]\n"
               "         [--warmup 3] [--json FILE]\n"
               "  gemm-rs, ag-gemm, gemm-ar, p2p   the fused ops and the runtime (under flux-run)\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    usage(args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string sub = args[0];
  args.erase(args.begin());
  try {
    if (sub == "gemm") return flux::bench::run_gemm_bench(args, command_line);
    if (sub == "p2p") return flux::bench::run_p2p_bench(args, command_line);
    if (sub == "gemm-rs") return flux::bench::run_gemm_rs_bench(args, command_line);
    if (sub == "ag-gemm") return flux::bench::run_ag_gemm_bench(args, command_line);
    if (sub == "gemm-ar") return flux::bench::run_gemm_ar_bench(args, command_line);
    if (sub == "tune") return flux::bench::run_tune_bench(args, command_line);
    if (sub == "model") return flux::bench::run_model_bench(args, command_line);
    std::fprintf(stderr, "flux-bench: unknown subcommand '%s'\n", sub.c_str());
    usage(stderr);
    return 2;
  } catch (const flux::Unsupported& e) {
    std::fprintf(stderr, "flux-bench: %s\nflux-bench: the benchmark needs an NVIDIA Hopper GPU (sm_90); nothing was measured.\n",
                 e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flux-bench: error: %s\n", e.what());
    return 1;
  }
}
