// tools/bench/bench_args.cpp — see bench_args.h.
#include "tools/bench/bench_args.h"

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

}  // namespace flux::bench
