// tools/bench/bench_args.cpp — see bench_args.h.
#include "tools/bench/bench_args.h"
#include "tools/bench/corpus.h"

#include <cstdlib>
#include <sstream>

#include "src/common/check.h"

namespace flux::bench {

Args::Args(std::vector<std::string> argv, std::set<std::string> value_options, std::set<std::string> flag_options) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (flag_options.count(a)) {
      flags_.insert(a);
    } else if (value_options.count(a)) {
      FLUX_CHECK_ARG(i + 1 < argv.size(), "flux-bench: option ", a, " needs a value");
      values_[a] = argv[++i];
    } else {
      std::string known;
      for (const auto& o : value_options) known += " " + o + " <value>";
      for (const auto& o : flag_options) known += " " + o;
      throw InvalidArgument(detail::cat("flux-bench: unknown option '", a, "' (expected:", known, ")"));
    }
  }
}

bool Args::flag(const std::string& name) const { return flags_.count(name) > 0; }

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

int64_t Args::get_int(const std::string& name, int64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  FLUX_CHECK_ARG(end != it->second.c_str() && *end == '\0', "flux-bench: ", name, " '", it->second,
                 "' is not an integer");
  return v;
}

std::vector<std::string> Args::get_list(const std::string& name, const std::string& fallback) const {
  std::vector<std::string> out;
  std::stringstream in(get(name, fallback));
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Shape parse_shape(const std::string& text) {
  Shape s{0, 0, 0, 0};
  char x1 = 0, x2 = 0;
  std::istringstream in(text);
  in >> s.m >> x1 >> s.n >> x2 >> s.k;
  FLUX_CHECK_ARG(!in.fail() && in.eof() && x1 == 'x' && x2 == 'x' && s.m > 0 && s.n > 0 && s.k > 0,
                 "flux-bench: shape '", text, "' (expected MxNxK with positive integers, e.g. 4096x6144x12288)");
  return s;
}

std::vector<Shape> select_shapes(const Args& args, const std::vector<Shape>& fallback) {
  std::vector<Shape> shapes;
  const std::string corpus = args.get("--corpus", "");
  if (!corpus.empty()) {
    FLUX_CHECK_ARG(corpus == "tune" || corpus == "test" || corpus == "all", "flux-bench: --corpus ", corpus,
                   " (expected tune, test or all)");
    FLUX_CHECK_ARG(args.get("--shapes", "").empty(), "flux-bench: --corpus and --shapes exclude each other");
    const int64_t every = args.get_int("--corpus-every", 1);
    FLUX_CHECK_ARG(every >= 1, "flux-bench: --corpus-every ", every, " (expected >= 1)");
    const int64_t max_m = args.get_int("--corpus-max-m", 0);
    FLUX_CHECK_ARG(max_m >= 0, "flux-bench: --corpus-max-m ", max_m, " (expected >= 0; 0 = no limit)");
    const int64_t min_m = args.get_int("--corpus-min-m", 1);
    FLUX_CHECK_ARG(min_m >= 1, "flux-bench: --corpus-min-m ", min_m, " (expected >= 1)");
    int64_t index = 0;
    for (const CorpusRow& r : load_corpus(args.get("--corpus-file", "bench/corpus/gemm_corpus.csv"))) {
      if (corpus != "all" && r.half != corpus) continue;
      if (max_m > 0 && r.m > max_m) continue;
      if (r.m < min_m) continue;
      if (index++ % every != 0) continue;
      shapes.push_back({r.m, r.n, r.k, r.tp, r.name, r.half});
    }
    FLUX_CHECK_ARG(!shapes.empty(), "flux-bench: no corpus rows selected");
    return shapes;
  }
  if (args.get("--shapes", "").empty()) return fallback;
  for (const std::string& s : args.get_list("--shapes", "")) shapes.push_back(parse_shape(s));
  return shapes;
}

std::vector<Shape> gemm_suite_shapes() {
  std::vector<Shape> shapes;
  for (int64_t m : {1024, 4096, 8192}) {
    for (int tp : {2, 4, 8}) shapes.push_back({m, 49152 / tp, 12288, tp, "ag_gemm"});
  }
  for (int64_t m : {1024, 4096, 8192}) {
    for (int tp : {2, 4, 8}) shapes.push_back({m, 12288, 49152 / tp, tp, "gemm_rs"});
  }
  return shapes;
}

}  // namespace flux::bench
