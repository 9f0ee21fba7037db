// The result-file loader on arbitrary bytes: never crashes, never throws, stays within
// ResultLimits; whatever it accepts serialises and reads back to the same document. Whatever it
// accepts also goes through `compare` as the CLI drives it — alone (its variants) and against a
// copy under another label with every value scaled by 1.05 (runs across labels; the two runs'
// `created` apart, so the block check runs too) — and through every renderer: `compare` answers
// a table or a usage error, never crashes.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "kstacklab/report/compare_report.h"
#include "kstacklab/results/result_reader.h"
#include "kstacklab/results/results.h"
#include "kstacklab/stats/compare.h"

namespace {

using namespace kstacklab;  // NOLINT(google-build-using-namespace): fuzz entry point

void CompareAndRender(const std::vector<stats::CompareInput>& inputs) {
  stats::CompareOptions options;
  options.metrics = {"mean", "p50", "p99"};
  for (const std::vector<stats::CompareInput>& part : stats::SplitByVariantSet(inputs)) {
    auto table = stats::BuildCompareTable(part, options);
    if (!table.ok()) {
      if (table.error().exit_code != kExitUsage) std::abort();
      continue;
    }
    for (report::CompareFormat f : {report::CompareFormat::kGrid, report::CompareFormat::kMarkdown,
                                    report::CompareFormat::kCsv})
      (void)report::RenderCompare(*table, f);
    if (report::RenderCompare(*table, report::CompareFormat::kJson).empty()) std::abort();
    report::CompareWarningOptions verbose;
    verbose.verbose = true;
    (void)report::CompareWarningLines({*table}, verbose);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
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

  stats::CompareInput a{"a.json", *r};
  a.run.created = "2026-11-30T10:00:01Z";
  stats::CompareInput b{"b.json", *r};
  b.run.label = r->label + "-other";
  b.run.created = "2026-11-30T10:00:02Z";
  for (BenchmarkResult& bench : b.run.benchmarks)
    for (Repetition& rep : bench.repetitions)
      for (auto& [metric, value] : rep.metrics)
        if (std::isfinite(value * 1.05)) value *= 1.05;
  CompareAndRender({a});
  CompareAndRender({a, b, a, b});
  return 0;
}
