// src/ops/common/path_table.h — a fused op's paths by name, written once for every op: the table of
// (value, name) pairs is the op's whole path list; the name of a value and the parse of a name (options,
// knobs, the CLI and the torch ops all go through it, with one error format) are read from it.
// The op's plan says which paths a call may take (`supported`, with the reason) and runs them.
#pragma once

#include <cstddef>
#include <string>

#include "src/common/check.h"

namespace flux::ops {

template <typename Path>
struct PathName {
  Path path;
  const char* name;
};

template <typename Path, size_t N>
const char* path_name(const PathName<Path> (&table)[N], Path path) {
  for (const PathName<Path>& e : table) {
    if (e.path == path) return e.name;
  }
  return "?";
}

// "flux gemm_rs: unknown implementation 'x' (expected auto, fused, sequential or decomposed)".
template <typename Path, size_t N>
Path parse_path(const PathName<Path> (&table)[N], const std::string& text, const char* op, const char* what) {
  std::string expected;
  for (size_t i = 0; i < N; ++i) {
    if (text == table[i].name) return table[i].path;
    expected += i == 0 ? "" : i + 1 == N ? " or " : ", ";
    expected += table[i].name;
  }
  throw InvalidArgument(detail::cat(op, ": unknown ", what, " '", text, "' (expected ", expected, ")"));
}

// A call's path: `forced` as given when it is not the table's first entry (auto), with the reason
// "forced <name> (<where>)"; else `rule()` (which sets `reason` itself).
template <typename Path, size_t N, typename Rule>
Path resolve_path(const PathName<Path> (&table)[N], Path forced, const char* where, Rule&& rule, std::string* reason) {
  if (forced == table[0].path) return rule();
  *reason = detail::cat("forced ", path_name(table, forced), " (", where, ")");
  return forced;
}

}  // namespace flux::ops
