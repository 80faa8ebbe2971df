// tools/common/json.cpp — see json.h.
#include "tools/common/json.h"

#include <cmath>
#include <cstdio>

namespace flux::tools {

std::string json_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 2);
  for (unsigned char ch : text) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (ch < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", ch);
          out += buf;
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out;
}

void JsonLine::key(const std::string& k) {
  if (!body_.empty()) body_ += ", ";
  body_ += "\"" + json_escape(k) + "\": ";
}

JsonLine& JsonLine::add(const std::string& k, const std::string& value) {
  key(k);
  body_ += "\"" + json_escape(value) + "\"";
  return *this;
}

JsonLine& JsonLine::add(const std::string& k, const char* value) { return add(k, std::string(value ? value : "")); }

JsonLine& JsonLine::add(const std::string& k, double value) {
  key(k);
  if (!std::isfinite(value)) {
    body_ += "null";
  } else {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.6g", value);
    body_ += buf;
  }
  return *this;
}

JsonLine& JsonLine::add(const std::string& k, int64_t value) {
  key(k);
  body_ += std::to_string(value);
  return *this;
}

JsonLine& JsonLine::add(const std::string& k, bool value) {
  key(k);
  body_ += value ? "true" : "false";
  return *this;
}

JsonLine& JsonLine::add(const std::string& k, std::optional<double> value) {
  if (!value) return add_null(k);
  return add(k, *value);
}

JsonLine& JsonLine::add_null(const std::string& k) {
  key(k);
  body_ += "null";
  return *this;
}

}  // namespace flux::tools
