// The command-line value parsers and the text checks on arbitrary bytes. The first byte picks
// the parser; the checks are the parsers' contracts (what they accept round-trips).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "cli_util.h"
#include "kstacklab/common/text.h"
#include "kstacklab/knobs/knobs.h"
#include "kstacklab/loader/load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kstacklab;  // NOLINT(google-build-using-namespace): fuzz entry point
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] >= 0xF0) {  // the later parsers (the seeds below 0xF0 keep their meaning)
    switch (data[0] % 3) {
      case 0: {  // a decimal flag value: accepted -> finite and inside the range asked for
        auto v = ParseNumber(text, "--x", "0.5", -1e6, 1e6);
        if (v.ok() && (!std::isfinite(*v) || *v < -1e6 || *v > 1e6)) std::abort();
        break;
      }
      case 1: {  // --ab: accepted -> a known kind, a safe sysctl name, >= 2 distinct values
        auto spec = knobs::ParseAbSpec(text);
        if (spec.ok()) {
          const std::string& n = spec->name;
          if (spec->values.size() < 2 || n.empty() || n.find('/') != std::string::npos ||
              n.find("..") != std::string::npos || n.find_first_of("\t\n") != std::string::npos) {
            std::abort();
          }
          const std::set<std::string> distinct(spec->values.begin(), spec->values.end());
          if (distinct.size() != spec->values.size()) std::abort();
          for (const std::string& v : spec->values) {
            if (v.empty() || v.find_first_of("\t\n,") != std::string::npos) std::abort();
          }
        }
        break;
      }
      default: {  // the recovery file: accepted -> every write goes to the named sysctl's file
        auto entries = knobs::ParseRecoveryFile(text);
        if (entries.ok()) {
          const std::string root = knobs::SysctlRoot() + "/";
          for (const knobs::RecoveryEntry& e : *entries) {
            std::string rel = e.name;
            for (char& c : rel) c = c == '.' ? '/' : c;
            if (e.path != root + rel || e.path.find("/../") != std::string::npos ||
                e.value.size() > 4096 || e.value.find('\n') != std::string::npos) {
              std::abort();
            }
          }
        }
        break;
      }
    }
    return 0;
  }
  switch (data[0] % 6) {
    case 0: {
      auto v = ParseCount(text, "--n", 0, UINT64_MAX);
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
      auto id = loader::ParseStoreId(text);
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
