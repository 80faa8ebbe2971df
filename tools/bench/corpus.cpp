// tools/bench/corpus.cpp — see corpus.h.
#include "tools/bench/corpus.h"

#include <fstream>
#include <sstream>

#include "src/common/check.h"
#include "src/runtime/hmac_sha256.h"

namespace flux::bench {

std::string corpus_half(int64_t n, int64_t k) {
  const runtime::Digest d = runtime::sha256(std::to_string(n) + "x" + std::to_string(k));
  return d[0] % 2 == 0 ? "tune" : "test";
}

std::vector<CorpusRow> load_corpus(const std::string& path) {
  std::ifstream in(path);
  FLUX_CHECK_ARG(in.good(), "flux-bench: cannot read the corpus '", path,
                 "' (expected bench/corpus/gemm_corpus.csv of the repository: run from its root or pass --corpus-file)");
  std::vector<CorpusRow> rows;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (number == 1 || line.empty()) continue;  // header
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    FLUX_CHECK_ARG(f.size() == 9, "flux-bench: ", path, ":", number, ": ", f.size(),
                   " fields (expected name,family,layer,parallel,tp,m,n,k,half)");
    CorpusRow r;
    r.name = f[0];
    r.family = f[1];
    r.layer = f[2];
    r.parallel = f[3];
    try {
      r.tp = std::stoi(f[4]);
      r.m = std::stoll(f[5]);
      r.n = std::stoll(f[6]);
      r.k = std::stoll(f[7]);
    } catch (const std::exception&) {
      throw InvalidArgument(detail::cat("flux-bench: ", path, ":", number, ": tp, m, n, k must be integers"));
    }
    r.half = f[8];
    FLUX_CHECK_ARG(r.half == "tune" || r.half == "test", "flux-bench: ", path, ":", number, ": half '", r.half,
                   "' (expected tune or test)");
    rows.push_back(r);
  }
  return rows;
}

}  // namespace flux::bench
