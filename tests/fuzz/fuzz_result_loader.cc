// The result-file loader on arbitrary bytes: never crashes, never throws, stays within
// ResultLimits; whatever it accepts serialises and reads back to the same document.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kstacklab/results.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kstacklab;  // NOLINT(google-build-using-namespace): fuzz entry point
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto r = ResultFromJson(text, "fuzz");
  if (!r.ok()) return 0;
  if (r->benchmarks.size() > ResultLimits::kMaxBenchmarks) std::abort();
  for (const BenchmarkResult& b : r->benchmarks) {
    if (b.repetitions.empty()) std::abort();
    if (LabelProblem(b.name) || LabelProblem(b.variant)) std::abort();
  }
  if (LabelProblem(r->label)) std::abort();
  const std::string once = ResultToJson(*r);
  auto again = ResultFromJson(once, "fuzz round trip");
  if (!again.ok() || ResultToJson(*again) != once) std::abort();
  return 0;
}
