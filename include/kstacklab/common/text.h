// Text that reaches a terminal, a table or a result file: labels, variants, benchmark names.
// They must be UTF-8 without control characters (a NUL truncates C strings, a newline breaks a
// Markdown row, an ESC sequence drives the terminal). Input is checked with TextProblem();
// output that may still carry such bytes (an old file, a foreign store) goes through
// EscapeControl().
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/common/error.h"

namespace kstacklab {

// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view s);

// Why `s` is not acceptable as a label/name, or nullopt when it is: "is not valid UTF-8 (byte
// 0xe9 at offset 1)" or "contains the control character 0x0a at offset 3".
// Control characters: U+0000-U+001F, U+007F and the C1 range U+0080-U+009F.
std::optional<std::string> TextProblem(std::string_view s);

// Why `s` would look like other text, or nullopt: it holds an invisible or bidirectional format
// character (zero-width space/joiners U+200B-U+200F, embeddings and overrides U+202A-U+202E, word
// joiner and isolates U+2060-U+2069, BOM U+FEFF, U+061C, soft hyphen U+00AD, U+180E, U+034F).
// Malformed UTF-8 is TextProblem's to report (nullopt here). Look-alike letters of other scripts
// (Cyrillic "а" for Latin "a") are legitimate text and pass.
std::optional<std::string> InvisibleProblem(std::string_view s);

// The terminal columns `s` takes: 1 per code point, 2 for East Asian wide/fullwidth, 0 for
// combining marks and the invisible format characters above; a malformed byte counts 1. For
// aligning tables by what is seen, not by bytes.
size_t DisplayWidth(std::string_view s);

// `s` with every control character and every byte of an invalid UTF-8 sequence written as
// "\xNN"; other text (valid multi-byte UTF-8 included) unchanged. Idempotent on clean text.
std::string EscapeControl(std::string_view s);

// `s` without leading and trailing whitespace (isspace). The one trimmer.
std::string Trim(std::string_view s);

// The `separator`-separated pieces of `text`, in order; empty pieces are dropped unless
// `keep_empty` (then "a,,b," gives "a", "", "b", "" and "" gives one empty piece). The one
// splitter: comma lists of flags, knob values, metric lists.
std::vector<std::string> Split(std::string_view text, char separator, bool keep_empty = false);

// A count or CPU number: decimal digits only — no sign, no spaces, no 0x, no '+' — within
// [min, max] (overflow is out of range). The one strict parser for --iterations, --repetitions,
// --warmup, --sessions, --cpu, a campaign plan's counts, ... (CLI11 2.1 itself accepts "-5" for
// unsigned and wraps).
Expected<uint64_t> ParseCount(const std::string& text, const std::string& flag, uint64_t min,
                              uint64_t max);

// A finite decimal number (digits, an optional fraction and exponent, an optional leading "-":
// 0.5, 24e6, 1e-320, -3; never hex, spaces, "inf" or "nan") within [lo, hi]. Two errors: "not a
// number; give e.g. EXAMPLE" and "out of range; give a number in [lo, hi]". A value too small for
// a double is its nearest double (0 or a subnormal), not an error; one too large is. The one
// parser of a decimal number (flags, a campaign plan's percentages).
Expected<double> ParseNumber(const std::string& text, const std::string& flag,
                             const std::string& example,
                             double lo = -std::numeric_limits<double>::max(),
                             double hi = std::numeric_limits<double>::max());

// A duration: a decimal number >= 0 (ParseNumber's grammar, no sign) with ns, us, ms, s, min (m)
// or h ("10us", "120s"; a bare number is refused: "has no unit") -> nanoseconds, within
// [min_ns, max_ns]. The one parser for --stall-threshold, plan's
// --cost-* and a campaign plan's durations (exact for integral ns: 123456789ns stays).
Expected<double> ParseDurationNs(const std::string& text, const std::string& flag, double min_ns,
                                 double max_ns, const std::string& example);

}  // namespace kstacklab
