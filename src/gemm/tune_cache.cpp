// src/gemm/tune_cache.cpp — see tune_cache.h.
#include "src/gemm/tune_cache.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "src/common/check.h"
#include "src/gemm/gemm_config.h"
#include "src/runtime/hmac_sha256.h"

namespace flux::gemm {

namespace {

// Parses one flat JSON object of string and number values (the format this file writes).
bool parse_flat_object(const std::string& line, std::map<std::string, std::string>* out) {
  size_t i = 0;
  auto skip = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
  };
  auto string_at = [&](std::string* s) {
    if (i >= line.size() || line[i] != '"') return false;
    ++i;
    s->clear();
    while (i < line.size() && line[i] != '"') {
      if (line[i] == '\\' && i + 1 < line.size()) ++i;
      *s += line[i++];
    }
    if (i >= line.size()) return false;
    ++i;
    return true;
  };
  skip();
  if (i >= line.size() || line[i++] != '{') return false;
  while (true) {
    skip();
    if (i < line.size() && line[i] == '}') return true;
    std::string key, value;
    if (!string_at(&key)) return false;
    skip();
    if (i >= line.size() || line[i++] != ':') return false;
    skip();
    if (i < line.size() && line[i] == '"') {
      if (!string_at(&value)) return false;
    } else {
      while (i < line.size() && line[i] != ',' && line[i] != '}' && line[i] != ' ') value += line[i++];
      if (value.empty()) return false;
    }
    (*out)[key] = value;
    skip();
    if (i < line.size() && line[i] == ',') {
      ++i;
      continue;
    }
    if (i < line.size() && line[i] == '}') return true;
    return false;
  }
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

const char* raster_name(Raster r) { return r == Raster::kColMajor ? "col" : "row"; }

}  // namespace

int64_t TuneCache::m_bucket(int64_t m) {
  FLUX_CHECK_ARG(m >= 1, "flux tune cache: M = ", m, " (expected >= 1)");
  int64_t b = 1;
  while (b < m) b *= 2;
  return b;
}

std::string TuneCache::build_id() {
  std::string table = "flux-gemm-configs-v3";  // v3: swap-AB orders over C's units (rasters flipped)
  for (const ConfigShape& c : kConfigShapes) {
    table += detail::cat("|", c.name, ":", c.tile_m, "x", c.tile_n, "x", c.tile_k, "c", c.cluster_m, "x", c.cluster_n,
                         c.pingpong ? "p" : "c", c.split_k ? "s" : "");
  }
  return runtime::to_hex(runtime::sha256(table)).substr(0, 16);
}

TuneCache TuneCache::load(const std::string& path, const std::string& gpu, int sm_count, std::string* warning) {
  std::ifstream in(path);
  FLUX_CHECK_ARG(in.good(), "flux tune cache: cannot read '", path, "' (FLUX_TUNE_CACHE; make one with flux-bench tune)");
  TuneCache cache;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::map<std::string, std::string> f;
    FLUX_CHECK_ARG(parse_flat_object(line, &f), "flux tune cache: ", path, ":", number, ": not a flat JSON object");
    if (number == 1) {
      FLUX_CHECK_ARG(f.count("flux_tune_cache") && f.count("gpu") && f.count("sm_count") && f.count("build"),
                     "flux tune cache: ", path, ":1: not a flux tune cache header");
      std::string why;
      if (f["gpu"] != gpu) {
        why = detail::cat("it is for a ", f["gpu"], ", this is a ", gpu);
      } else if (std::atoi(f["sm_count"].c_str()) != sm_count) {
        why = detail::cat("it is for ", f["sm_count"], " SMs, this GPU has ", sm_count);
      } else if (f["build"] != build_id()) {
        why = detail::cat("it is from another build (config table ", f["build"], ", this build ", build_id(), ")");
      }
      if (!why.empty()) {
        if (warning) *warning = detail::cat("flux: ignoring the tune cache ", path, ": ", why);
        return TuneCache{};
      }
      continue;
    }
    TuneKey key;
    TuneChoice choice;
    try {
      key.dtype = parse_dtype(f.at("dtype"));
      key.layout = parse_weight_layout(f.at("layout"));
      key.n = std::stoll(f.at("n"));
      key.k = std::stoll(f.at("k"));
      key.sms = static_cast<int32_t>(std::stol(f.at("sms")));
      key.m_bucket = std::stoll(f.at("m_bucket"));
      choice.config = f.at("config");
      const std::string& r = f.at("raster");
      FLUX_CHECK_ARG(r == "row" || r == "col", "raster '", r, "'");
      choice.raster = r == "col" ? Raster::kColMajor : Raster::kRowMajor;
      choice.swizzle = static_cast<int32_t>(std::stol(f.at("swizzle")));
      choice.splits = f.count("splits") ? static_cast<int32_t>(std::stol(f.at("splits"))) : 1;
      FLUX_CHECK_ARG(choice.splits >= 1 && choice.splits <= kMaxSplitK, "splits ", choice.splits);
      choice.stream_k = f.count("stream_k") ? std::stol(f.at("stream_k")) != 0 : false;
      FLUX_CHECK_ARG(!choice.stream_k || choice.splits == 1, "stream_k with splits ", choice.splits);
      choice.ms = f.count("ms") ? std::stod(f.at("ms")) : 0.0;
    } catch (const std::exception& e) {
      throw InvalidArgument(detail::cat("flux tune cache: ", path, ":", number, ": bad entry (", e.what(), ")"));
    }
    cache.put(key, choice);
  }
  FLUX_CHECK_ARG(number >= 1, "flux tune cache: ", path, " is empty (expected a header line)");
  return cache;
}

void TuneCache::save(const std::string& path, const std::string& gpu, int sm_count) const {
  std::ofstream out(path, std::ios::trunc);
  FLUX_CHECK_ARG(out.good(), "flux tune cache: cannot write '", path, "'");
  out << "{\"flux_tune_cache\": 1, \"gpu\": \"" << escape(gpu) << "\", \"sm_count\": " << sm_count << ", \"build\": \""
      << build_id() << "\"}\n";
  for (const auto& [key, c] : entries_) {
    char ms[32];
    std::snprintf(ms, sizeof(ms), "%.6g", c.ms);
    out << "{\"dtype\": \"" << to_string(key.dtype) << "\", \"layout\": \"" << to_string(key.layout)
        << "\", \"n\": " << key.n << ", \"k\": " << key.k << ", \"sms\": " << key.sms << ", \"m_bucket\": " << key.m_bucket
        << ", \"config\": \"" << escape(c.config) << "\", \"raster\": \"" << raster_name(c.raster)
        << "\", \"swizzle\": " << c.swizzle << ", \"splits\": " << c.splits << ", \"stream_k\": " << (c.stream_k ? 1 : 0) << ", \"ms\": " << ms << "}\n";
  }
  FLUX_CHECK_ARG(out.good(), "flux tune cache: writing '", path, "' failed");
}

const TuneChoice* TuneCache::find(const TuneKey& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

std::string TuneCache::digest() const {
  std::string all;
  for (const auto& [key, c] : entries_) {
    all += detail::cat(int(key.dtype), ",", int(key.layout), ",", key.n, ",", key.k, ",", key.sms, ",", key.m_bucket, "=",
                       c.config, ",", int(c.raster), ",", c.swizzle, ",", c.splits, c.stream_k ? ",sk" : "", ";");
  }
  return runtime::to_hex(runtime::sha256(all)).substr(0, 16);
}

bool apply_tune_choice(const TuneChoice& choice, int64_t m, int64_t n, int64_t k, const std::string& source,
                       GemmSelection* sel, DType dtype) {
  for (const GemmConfigInfo& c : gemm_configs()) {
    if (choice.config != c.name) continue;
    if (choice.splits > 1 && (!c.split_k || !split_k_divides(k, choice.splits, dtype))) return false;
    if (choice.stream_k && !c.stream_k) return false;
    sel->config = c;
    sel->tiles_m = (m + c.tile_m - 1) / c.tile_m;
    sel->tiles_n = (n + c.tile_n - 1) / c.tile_n;
    sel->raster = choice.raster;
    sel->swizzle = choice.swizzle;
    sel->splits = choice.splits;
    sel->stream_k = choice.stream_k;
    sel->predicted_us = 0.0;
    sel->reason = detail::cat("tune cache ", source, ": ", c.name, " raster ", raster_name(choice.raster), " swizzle ",
                              choice.swizzle, " splits ", choice.splits, choice.stream_k ? " stream-K" : "",
                              " (measured ", choice.ms, " ms)");
    return true;
  }
  return false;
}

}  // namespace flux::gemm
