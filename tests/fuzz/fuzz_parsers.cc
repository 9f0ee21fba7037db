// The command-line value parsers and the text checks on arbitrary bytes. The first byte picks
// the parser; the checks are the parsers' contracts (what they accept round-trips).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cli/cli_util.h"
#include "kstacklab/load.h"
#include "kstacklab/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kstacklab;  // NOLINT(google-build-using-namespace): fuzz entry point
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0: {
      auto v = cli::ParseCount(text, "--n", 0, UINT64_MAX);
      if (v.ok() &&
          std::to_string(*v) != text.substr(text.find_first_not_of('0') == std::string::npos
                                                ? text.size() - 1
                                                : text.find_first_not_of('0'))) {
        std::abort();  // accepted text is exactly the decimal digits of the value
      }
      break;
    }
    case 1: {
      auto v = cli::ParseUnsigned(text, "--seed", 1 + (data[0] >> 3) % 64);
      (void)v;
      break;
    }
    case 2: {
      auto id = ParseStoreId(text);
      if (id.ok() && *id <= 0) std::abort();
      break;
    }
    case 3: {
      auto bytes = cli::ParseHexBytes(text, "--key", data[0] >> 4);
      if (bytes.ok() && cli::HexBytes(bytes->data(), bytes->size()).size() != text.size()) {
        std::abort();
      }
      break;
    }
    case 4: {
      for (const std::string& item : Split(text, ',')) {
        if (item.empty() || item.find(',') != std::string::npos) std::abort();
      }
      break;
    }
    default: {
      const std::string escaped = EscapeControl(text);
      if (TextProblem(escaped)) std::abort();                   // escaping removes every problem
      if (!TextProblem(text) && escaped != text) std::abort();  // and leaves clean text alone
      if (TextProblem(text) && IsValidUtf8(text) && escaped == text) std::abort();
      break;
    }
  }
  return 0;
}
