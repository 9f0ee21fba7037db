#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdlib>
#include <iostream>
#include <iterator>

#include "kstacklab/store.h"

namespace kstacklab {

std::string DefaultStorePath() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/kstacklab/results.db";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.local/share/kstacklab/results.db";
}

// Store ids are resolved by LoadFromStore (store.cc) when the store is built in.
Expected<RunResult> LoadFromStore(const std::string& spec, uint64_t id,
                                  const std::string& store_path);

Expected<RunResult> LoadResultInput(const std::string& spec, const std::string& store_path) {
  if (spec == "-") {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return ResultFromJson(text, "<stdin>");
  }
  struct stat st {};
  if (::stat(spec.c_str(), &st) == 0) return ReadResultFile(spec);
  std::string digits = spec.rfind("id:", 0) == 0 ? spec.substr(3) : spec;
  if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos &&
      digits.size() < 19) {
    return LoadFromStore(spec, std::stoull(digits), store_path);
  }
  return UsageError(fmt::format(
      "'{}' is neither a result file nor a store id (see `kstacklab results list`)", spec));
}

}  // namespace kstacklab
