// flux/knobs.h — every environment knob of the library, declared once (src/common/knobs.cpp) with
// its default and meaning, read through one helper. README.md lists them all (a CPU test checks).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flux::knobs {

struct Knob {
  const char* name;
  const char* default_value;
  const char* meaning;
};

// All knobs, in README order.
const std::vector<Knob>& all();

// The value of a registered knob: the environment variable if set and non-empty, else its default.
// Throws flux::InvalidArgument for an unregistered name (a bug) or, in get_int, a value that is not
// an integer (naming the knob, the value and what was expected).
std::string get_string(const std::string& name);
int64_t get_int(const std::string& name);

// Knobs the library no longer reads, each with what replaced it. README.md lists them too.
struct RetiredKnob {
  const char* name;
  const char* replaced_by;
};
const std::vector<RetiredKnob>& retired();

// Throws flux::InvalidArgument naming the first retired knob set (non-empty) in the environment and what
// replaced it, so that a setting that no longer does anything is never silently ignored. Every GemmPlan
// (and so every op built on the GEMM core) calls it.
void reject_retired();

}  // namespace flux::knobs
