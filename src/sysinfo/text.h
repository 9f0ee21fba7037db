// Text helpers shared by the sysinfo parsers and the capture (private to src/sysinfo/).
#pragma once

#include <cctype>
#include <string>
#include <string_view>

#include "kstacklab/text.h"

namespace kstacklab::sysinfo_text {

inline bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

using ::kstacklab::Trim;  // include/kstacklab/text.h

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
