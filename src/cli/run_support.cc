#include "run_support.h"

#include <fmt/format.h>

#include "cli_util.h"
#include "command.h"
#include "kstacklab/store/store.h"

namespace kstacklab::cli {

Expected<int64_t> RecordRunInStore(const RunResult& result, const std::string& store_path,
                                   const std::string& written_file) {
  const std::string path = StorePath(store_path);
  auto id = store::RecordInStore(result, path);
  if (!id.ok()) {
    return RuntimeError(fmt::format(
        "not recorded in the store: {} (--store FILE, or --no-store){}", id.error().message,
        written_file.empty()
            ? std::string()
            : fmt::format("; the result is in {}: `kstacklab results import {}{}` adds it later",
                          written_file, written_file,
                          store_path.empty() ? "" : " --store " + store_path)));
  }
  std::fprintf(stderr, "kstacklab: recorded as store id %lld in %s\n", static_cast<long long>(*id),
               path.c_str());
  return *id;
}

}  // namespace kstacklab::cli
