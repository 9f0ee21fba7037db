// `--bench GLOB` (kstacklab/results/bench_glob.h).
#include "kstacklab/results/bench_glob.h"

#include <fnmatch.h>

#include <string>

#include "kstacklab/results/json.h"
#include "kstacklab/results/naming.h"

namespace kstacklab {

bool MatchesBenchGlob(const std::string& glob, const RowKey& row) {
  const std::string& name = row.name;
  const Json& params = row.params;
  const Json none = Json::object();
  auto matches = [&](const std::string& v) {
    for (const std::string& id : {BenchmarkId(name, params, v), BenchmarkId(name, none, v),
                                  BenchmarkId(name, params, ""), name}) {
      if (fnmatch(glob.c_str(), id.c_str(), 0) == 0) return true;
    }
    return false;
  };
  // A row measured under an --ab value also answers to its own variant ("getpid:raw" selects
  // "raw,kernel.stack_erasing=0" and "=1").
  return matches(StoredVariant(row.variant, row.knob)) ||
         (!row.knob.empty() && !row.variant.empty() && matches(row.variant));
}

}  // namespace kstacklab
