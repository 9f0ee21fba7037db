#include "kstacklab/common/text.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace kstacklab {
namespace {

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when it is malformed
// (RFC 3629 section 4 table). Sets *cp to the code point.
size_t SequenceLength(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t len = 0;
  uint8_t lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;  // overlong
    if (c == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  uint32_t v = c & (0xff >> (len + 1));
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    v = (v << 6) | (b(i + k) & 0x3f);
  }
  *cp = v;
  return len;
}

bool IsControl(uint32_t cp) { return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f); }

// Format characters that draw nothing or reorder what follows: zero-width spaces and joiners,
// the bidirectional embeddings, overrides and isolates, the word joiner and invisible operators,
// the byte-order mark, the Arabic letter mark, the soft hyphen, the Mongolian vowel separator and
// the combining grapheme joiner. Two labels differing only in these look alike.
bool IsInvisible(uint32_t cp) {
  return cp == 0x00AD || cp == 0x034F || cp == 0x061C || cp == 0x180E ||
         (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2060 && cp <= 0x2069) || cp == 0xFEFF;
}

// Combining marks (drawn on the previous character): the main blocks.
bool IsCombining(uint32_t cp) {
  return (cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x1AB0 && cp <= 0x1AFF) ||
         (cp >= 0x1DC0 && cp <= 0x1DFF) || (cp >= 0x20D0 && cp <= 0x20FF) ||
         (cp >= 0xFE20 && cp <= 0xFE2F);
}

// East Asian Wide and Fullwidth ranges (two terminal columns), after Markus Kuhn's wcwidth.
bool IsWide(uint32_t cp) {
  return (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0x303E) ||
         (cp >= 0x3041 && cp <= 0x33FF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xA000 && cp <= 0xA4CF) ||
         (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
         (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
         (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) ||
         (cp >= 0x1F900 && cp <= 0x1F9FF) || (cp >= 0x20000 && cp <= 0x3FFFD);
}

}  // namespace

std::optional<std::string> InvisibleProblem(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = SequenceLength(s, i, &cp);
    if (n == 0) return std::nullopt;  // TextProblem's to report
    if (IsInvisible(cp)) {
      return fmt::format(
          "contains the invisible or bidirectional format character U+{:04X} at offset {} (it "
          "would make different text look alike)",
          cp, i);
    }
    i += n;
  }
  return std::nullopt;
}

size_t DisplayWidth(std::string_view s) {
  size_t width = 0;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = SequenceLength(s, i, &cp);
    if (n == 0) {
      ++width;
      ++i;
      continue;
    }
    if (!IsInvisible(cp) && !IsCombining(cp)) width += IsWide(cp) ? 2 : 1;
    i += n;
  }
  return width;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    size_t n = SequenceLength(s, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::optional<std::string> TextProblem(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    size_t n = SequenceLength(s, i, &cp);
    if (n == 0) {
      return fmt::format("is not valid UTF-8 (byte 0x{:02x} at offset {})",
                         static_cast<uint8_t>(s[i]), i);
    }
    if (IsControl(cp)) {
      return fmt::format("contains the control character U+{:04X} at offset {}", cp, i);
    }
    i += n;
  }
  return std::nullopt;
}

std::string EscapeControl(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    size_t n = SequenceLength(s, i, &cp);
    if (n == 0 || IsControl(cp)) {
      const size_t bad = n == 0 ? 1 : n;
      for (size_t k = 0; k < bad; ++k) {
        out += fmt::format("\\x{:02x}", static_cast<uint8_t>(s[i + k]));
      }
      i += bad;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string Trim(std::string_view s) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  size_t b = 0, e = s.size();
  while (b < e && space(s[b])) ++b;
  while (e > b && space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> Split(std::string_view text, char separator, bool keep_empty) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    const std::string_view piece =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (keep_empty || !piece.empty()) out.emplace_back(piece);
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

namespace {

// The length of the decimal number that starts `t` (the one grammar of numbers: digits with an
// optional fraction and exponent, "-" first only when `sign`): 0 for none. strtod also takes hex
// ("0x10", "0x1p-3"), leading spaces, "inf" and "nan"; none of them is a number here.
size_t DecimalPrefix(std::string_view t, bool sign) {
  size_t i = 0;
  if (sign && i < t.size() && t[i] == '-') ++i;
  const auto digits = [&] {
    const size_t start = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i - start;
  };
  size_t n = digits();
  if (i < t.size() && t[i] == '.') {
    ++i;
    n += digits();
  }
  if (n == 0) return 0;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    const size_t mark = i++;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (digits() == 0) i = mark;  // "5e" or "2ex": the number ends before the e
  }
  return i;
}

// 1e10 -> "10s", 1 -> "1ns", 3.1536e16 -> "8760h".
std::string DurationText(double ns) {
  if (ns >= 3600e9) return fmt::format("{:g}h", ns / 3600e9);
  if (ns >= 1e9) return fmt::format("{:g}s", ns / 1e9);
  if (ns >= 1e6) return fmt::format("{:g}ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:g}us", ns / 1e3);
  return fmt::format("{:g}ns", ns);
}

}  // namespace

Expected<double> ParseDurationNs(const std::string& text, const std::string& flag, double min_ns,
                                 double max_ns, const std::string& example) {
  const size_t n = DecimalPrefix(text, /*sign=*/false);
  const double v = n == 0 ? 0 : std::strtod(text.substr(0, n).c_str(), nullptr);
  const std::string suffix = text.substr(n);
  const double scale = suffix == "ns"                     ? 1
                       : suffix == "us"                   ? 1e3
                       : suffix == "ms"                   ? 1e6
                       : suffix == "s"                    ? 1e9
                       : suffix == "min" || suffix == "m" ? 60e9
                       : suffix == "h"                    ? 3600e9
                                                          : -1;
  if (n > 0 && suffix.empty() && std::isfinite(v)) {
    return UsageError(fmt::format("{} '{}' has no unit; give e.g. {}s or {}", flag,
                                  EscapeControl(text), EscapeControl(text), example));
  }
  if (n == 0 || scale < 0 || !std::isfinite(v)) {
    return UsageError(fmt::format(
        "{} '{}' is not a duration; give a number >= 0 with ns, us, ms, s, min or h, e.g. {}", flag,
        EscapeControl(text), example));
  }
  const double ns = v * scale;
  if (!(ns >= min_ns && ns <= max_ns)) {
    return UsageError(fmt::format("{} '{}' is out of range; give {} to {}, e.g. {}", flag,
                                  EscapeControl(text), DurationText(min_ns), DurationText(max_ns),
                                  example));
  }
  return ns;
}

Expected<uint64_t> ParseCount(const std::string& text, const std::string& flag, uint64_t min,
                              uint64_t max) {
  auto bad = [&](const char* why) {
    return UsageError(
        fmt::format("{} '{}' {}: give a decimal integer from {} to {}", flag, text, why, min, max));
  };
  if (text.empty()) return bad("is empty");
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return bad("is not a plain decimal number");
    const auto d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return bad("is out of range");
    v = v * 10 + d;
  }
  if (v < min || v > max) return bad("is out of range");
  return v;
}

Expected<double> ParseNumber(const std::string& text, const std::string& flag,
                             const std::string& example, double lo, double hi) {
  // The decimal grammar only (DecimalPrefix), then strtod for its value. errno is not consulted:
  // ERANGE on underflow still returns the nearest double, and on overflow returns HUGE_VAL,
  // which the isfinite test refuses.
  const bool whole = !text.empty() && DecimalPrefix(text, /*sign=*/true) == text.size();
  const double v = whole ? std::strtod(text.c_str(), nullptr) : 0;
  if (!whole || !std::isfinite(v)) {
    return UsageError(
        fmt::format("{} '{}' is not a number; give e.g. {}", flag, EscapeControl(text), example));
  }
  if (v < lo || v > hi) {
    return UsageError(fmt::format("{} {} is out of range; give a number in [{:g}, {:g}]", flag,
                                  EscapeControl(text), lo, hi));
  }
  return v;
}

}  // namespace kstacklab
