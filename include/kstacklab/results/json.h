// The JSON value type of every kstacklab document (result files, the environment capture):
// nlohmann::ordered_json, so keys keep the documented order when written.
#pragma once

#include <algorithm>
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

// The deepest nesting of arrays/objects in the JSON text `text`, scanning no further than one
// level past `limit` (strings skipped, escapes honoured). For readers to call before parsing, so
// that no recursive step (parse, copy, dump, destruction) ever sees a deeper document.
inline int JsonNestingDepth(const std::string& text, int limit) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
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
