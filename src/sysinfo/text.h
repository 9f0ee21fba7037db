// Text helpers shared by the sysinfo parsers and the capture (private to src/sysinfo/).
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace kstacklab::sysinfo_text {

inline bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// `s` without leading and trailing whitespace.
inline std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && IsSpace(s[b])) ++b;
  while (e > b && IsSpace(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

// Calls fn(piece) for every `separator`-separated piece of `text`, separator excluded: a final
// piece without a separator is included, no empty piece follows a final separator.
template <class Fn>
void ForEachPiece(std::string_view text, char separator, Fn&& fn) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(separator, pos);
    if (end == std::string_view::npos) end = text.size();
    fn(text.substr(pos, end - pos));
    pos = end + 1;
  }
}

template <class Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  ForEachPiece(text, '\n', fn);
}

}  // namespace kstacklab::sysinfo_text
