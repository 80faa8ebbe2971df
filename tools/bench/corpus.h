// tools/bench/corpus.h — the GEMM shape corpus (bench/corpus/gemm_corpus.csv, made by
// scripts/corpus/make_corpus.py): per-rank GEMMs of public LLMs and random shapes, split by a fixed rule
// on the weight shape into a tuning half and a test half.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flux::bench {

struct CorpusRow {
  std::string name, family, layer, parallel;
  int tp = 0;
  int64_t m = 0, n = 0, k = 0;
  std::string half;  // "tune" or "test"
};

// The split rule: "tune" if the first byte of sha256("<N>x<K>") is even, else "test" (every M of a weight
// lands in one half; the test half holds only weights the tuning never saw).
std::string corpus_half(int64_t n, int64_t k);

// Reads the CSV; throws InvalidArgument naming the file and line on a malformed one.
std::vector<CorpusRow> load_corpus(const std::string& path);

}  // namespace flux::bench
