// Small parsing/printing helpers shared by subcommands. All parse errors are UsageErrors that
// name the flag and the expected form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kstacklab/error.h"

namespace kstacklab::cli {

// Decimal or 0x-prefixed hexadecimal unsigned integer that fits in `bits` bits.
Expected<uint64_t> ParseUnsigned(const std::string& text, const std::string& flag, int bits = 64);

// Exactly `bytes` bytes as 2*bytes hex digits (no 0x, either case). bytes == 0: any even length.
Expected<std::vector<uint8_t>> ParseHexBytes(const std::string& text, const std::string& flag,
                                             size_t bytes);

// Lowercase hex of bytes in order.
std::string HexBytes(const uint8_t* data, size_t n);

// True when stderr is a terminal (progress is shown only then).
bool StderrIsTty();

}  // namespace kstacklab::cli
