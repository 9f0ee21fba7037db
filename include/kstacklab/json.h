// The JSON value type of every kstacklab document (result files, the environment capture):
// nlohmann::ordered_json, so keys keep the documented order when written.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace kstacklab {

using Json = nlohmann::ordered_json;

// Every JSON document kstacklab prints or writes: indented by 2, newline-terminated, and text
// that is not valid UTF-8 (a file name, a hand-edited store, /proc) replaced by U+FFFD instead
// of throwing.
inline std::string DumpJson(const Json& j) {
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

// A typed field as JSON: its value, or null when it has none.
template <class T>
Json OptionalJson(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// v rounded to `digits` significant digits through its decimal text, so documents are stable
// across printf implementations. strtod, not std::stod: a subnormal (a p-value of 1e-310) is a
// value, not an exception.
inline double RoundSignificant(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return std::strtod(buf, nullptr);
}

}  // namespace kstacklab
