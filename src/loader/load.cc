#include "kstacklab/loader/load.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <atomic>

#include "kstacklab/results/result_reader.h"
#include "kstacklab/store/store.h"

namespace kstacklab::loader {

Expected<int64_t> ParseStoreId(const std::string& text) {
  const std::string digits = text.rfind("id:", 0) == 0 ? text.substr(3) : text;
  int64_t id = 0;
  bool ok = !digits.empty() && digits.size() <= 18;
  for (char c : digits) {
    if (!ok || c < '0' || c > '9') {
      ok = false;
      break;
    }
    id = id * 10 + (c - '0');
  }
  if (!ok || id <= 0) {
    return UsageError(
        fmt::format("'{}' is not a store id: give a positive integer such as 17 or id:17 "
                    "(see `kstacklab results list`)",
                    text));
  }
  return id;
}

Expected<RunResult> LoadResultInput(const std::string& spec, const std::string& store_path) {
  if (spec == "-") {
    static std::atomic<bool> used{false};
    if (used.exchange(true)) {
      return UsageError("'-' (standard input) can be given only once");
    }
    return ReadResultStdin();
  }
  struct stat st {};
  if (::stat(spec.c_str(), &st) == 0) return ReadResultFile(spec);
  const bool looks_like_id =
      spec.rfind("id:", 0) == 0 ||
      (!spec.empty() && spec.find_first_not_of("0123456789") == std::string::npos);
  if (!looks_like_id) {
    return UsageError(fmt::format(
        "'{}' is neither a result file nor a store id (see `kstacklab results list`)", spec));
  }
  auto id = ParseStoreId(spec);
  if (!id.ok()) return id.error();
  auto store = store::ResultStore::Open(store_path, store::ResultStore::Mode::kExisting);
  if (!store.ok()) {
    Error e = store.error();
    e.message = fmt::format("'{}' is not a file, and as a store id: {}", spec, e.message);
    return e;
  }
  return store->Get(*id);
}

}  // namespace kstacklab::loader
