// Text helpers shared by the sysinfo parsers and the capture (private to src/sysinfo/).
#pragma once

#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kstacklab/common/text.h"

namespace kstacklab::sysinfo::sysinfo_text {

inline bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

using ::kstacklab::Trim;  // include/kstacklab/common/text.h

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

// `text`, whole, as an unsigned decimal number ("250"); nullopt for anything else ("", " 1",
// "+1", "-1", "0x19", "1a", or beyond 64 bits), as the kernel's decimal fields never are.
inline std::optional<uint64_t> DecimalNumber(std::string_view text) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return n;
}

template <class Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  ForEachPiece(text, '\n', fn);
}

}  // namespace kstacklab::sysinfo::sysinfo_text
