// The SQLite results store. (Being written: until then a store id is an error that says so.)
#include <fmt/format.h>

#include "kstacklab/store.h"

namespace kstacklab {

Expected<RunResult> LoadFromStore(const std::string& spec, uint64_t /*id*/,
                                  const std::string& store_path) {
  return UsageError(fmt::format("'{}': reading store ids from {} is not available in this build",
                                spec, store_path));
}

}  // namespace kstacklab
