// tools/common/json.h — one JSON object per line (the benchmark's output format, DESIGN.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace flux::tools {

// Builds {"key": value, ...} in insertion order. Strings are escaped; non-finite doubles and empty
// optionals are written as null.
class JsonLine {
 public:
  JsonLine& add(const std::string& key, const std::string& value);
  JsonLine& add(const std::string& key, const char* value);
  JsonLine& add(const std::string& key, double value);
  JsonLine& add(const std::string& key, int64_t value);
  JsonLine& add(const std::string& key, int value) { return add(key, static_cast<int64_t>(value)); }
  JsonLine& add(const std::string& key, bool value);
  JsonLine& add(const std::string& key, std::optional<double> value);
  JsonLine& add_null(const std::string& key);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& k);
  std::string body_;
};

std::string json_escape(const std::string& text);

}  // namespace flux::tools
