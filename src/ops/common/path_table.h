// src/ops/common/path_table.h — a fused op's paths, written once for every op. Two tables per op:
//   the path table (host planning, CPU-tested): (value, name, supported) per path; the name of a value and
//     the parse of a name (options, knobs, the CLI and the torch ops all go through it, with one error
//     format), and whether a call can take a path (`supported`, with the reason and what to use instead):
//     a forced path that cannot run is refused with that reason, and the rule skips it;
//   the run table (the op's launching code): (value, member function) per resolved path, which replaces a
//     switch over the enum.
// The first entry of a path table is the op's "auto" (the rule).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "flux/types.h"
#include "src/common/check.h"

namespace flux::ops {

// What a path's `supported` sees of one call.
struct PathCall {
  int64_t m = 0;                       // the call's rows (AG+GEMM: gathered, W x shard)
  int world_size = 1;
  bool shares_gpu = false;              // ranks of this communicator share this GPU
  ScaleKind scale = ScaleKind::kNone;   // the plan's scale kind
};

template <typename Path>
struct PathEntry {
  Path path;
  const char* name;
  // Null: every call the op accepts can take the path. Else false (and *why, when why is not null) for a
  // call it cannot run. Never asked at W = 1, where every path is the GEMM core alone.
  bool (*supported)(const PathCall& call, std::string* why) = nullptr;
};

template <typename Path, size_t N>
const PathEntry<Path>* path_entry(const PathEntry<Path> (&table)[N], Path path) {
  for (const PathEntry<Path>& e : table) {
    if (e.path == path) return &e;
  }
  return nullptr;
}

template <typename Path, size_t N>
const char* path_name(const PathEntry<Path> (&table)[N], Path path) {
  const PathEntry<Path>* e = path_entry(table, path);
  return e ? e->name : "?";
}

// "flux gemm_rs: unknown implementation 'x' (expected auto, fused, sequential or decomposed)".
template <typename Path, size_t N>
Path parse_path(const PathEntry<Path> (&table)[N], const std::string& text, const char* op, const char* what) {
  std::string expected;
  for (size_t i = 0; i < N; ++i) {
    if (text == table[i].name) return table[i].path;
    expected += i == 0 ? "" : i + 1 == N ? " or " : ", ";
    expected += table[i].name;
  }
  throw InvalidArgument(detail::cat(op, ": unknown ", what, " '", text, "' (expected ", expected, ")"));
}

// Whether `call` can take `path` (W = 1: always).
template <typename Path, size_t N>
bool path_supported(const PathEntry<Path> (&table)[N], Path path, const PathCall& call, std::string* why) {
  if (call.world_size == 1) return true;
  const PathEntry<Path>* e = path_entry(table, path);
  FLUX_CHECK(e != nullptr, "path ", int(path), " is not in its op's path table");
  return e->supported == nullptr || e->supported(call, why);
}

// A call's path: `forced` as given when it is not the table's first entry (auto), with the reason
// "forced <name> (<where>)", refused (InvalidArgument, the entry's reason) when the call cannot take it;
// else `rule()` (which sets `reason` itself and skips the paths the call cannot take).
template <typename Path, size_t N, typename Rule>
Path resolve_path(const PathEntry<Path> (&table)[N], Path forced, const char* where, const PathCall& call, Rule&& rule,
                  std::string* reason) {
  if (forced == table[0].path) return rule();
  std::string why;
  FLUX_CHECK_ARG(path_supported(table, forced, call, &why), why);
  *reason = detail::cat("forced ", path_name(table, forced), " (", where, ")");
  return forced;
}

// The run table: the member function of the op's implementation that runs a resolved path.
template <typename Path, typename Fn>
struct PathRun {
  Path path;
  Fn run;
};

// Runs `path` from `table` on `self`; a path without an entry (auto, never resolved) is an internal error.
template <typename Path, typename Fn, size_t N, typename Self, typename... Args>
void run_path(const PathRun<Path, Fn> (&table)[N], Path path, const char* op, Self& self, Args&&... args) {
  for (const PathRun<Path, Fn>& e : table) {
    if (e.path == path) {
      (self.*e.run)(std::forward<Args>(args)...);
      return;
    }
  }
  FLUX_CHECK(false, op, ": no run entry for path ", int(path), " (unresolved)");
}

}  // namespace flux::ops
