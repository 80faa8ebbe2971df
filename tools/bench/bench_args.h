// tools/bench/bench_args.h — the command-line options of a flux-bench subcommand.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace flux::bench {

// "--name value" and "--flag" options; every option must be declared (unknown ones are errors).
class Args {
 public:
  Args(std::vector<std::string> argv, std::set<std::string> value_options, std::set<std::string> flag_options);
  bool flag(const std::string& name) const;
  std::string get(const std::string& name, const std::string& fallback) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  std::vector<std::string> get_list(const std::string& name, const std::string& fallback) const;  // comma-separated

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
};

struct Shape {
  int64_t m, n, k;
  int tp;  // tensor-parallel degree the shape belongs to (0: not from the suite)
  std::string name = "";  // corpus rows: the model layer (bench/corpus/gemm_corpus.csv)
  std::string half = "";  // corpus rows: "tune" or "test"
};
// The 18 per-rank shapes of DESIGN.md "Measuring", each at its TP: AG+GEMM's M x 49152/tp x 12288
// (name "ag_gemm") and GEMM+RS's M x 12288 x 49152/tp (name "gemm_rs"), M in {1024, 4096, 8192}, tp in {2, 4, 8}.
std::vector<Shape> gemm_suite_shapes();

// "MxNxK" (throws InvalidArgument otherwise).
Shape parse_shape(const std::string& text);

// The shapes a subcommand runs: --corpus tune|test|all (rows of that half of --corpus-file, default
// bench/corpus/gemm_corpus.csv, every --corpus-every-th), else --shapes MxNxK,..., else `fallback`.
std::vector<Shape> select_shapes(const Args& args, const std::vector<Shape>& fallback);

}  // namespace flux::bench
