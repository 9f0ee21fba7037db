// `kstacklab entropy --kernel --records FILE` on arbitrary bytes: the CSV parser, the offset
// derivation (the kernel's geometry read off the heights), the entropy statistics, the serial
// dependence, the input diagnosis and the per-CPU generator check must return a result or an
// error, never crash — and offsets DeriveOffsets accepted are always offsets of the geometry it
// reports, and the generator check's counts add up (checked: abort if not).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kstacklab/analysis/entropy.h"
#include "kstacklab/live/infer.h"
#include "kstacklab/live/records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kstacklab;  // NOLINT(google-build-using-namespace): fuzz entry point
  auto records = live::RecordsFromCsv(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!records.ok() || records->empty()) return 0;
  (void)live::DiagnoseInputs(*records);
  auto derived = live::DeriveOffsets(*records);
  if (!derived.ok()) return 0;
  for (uint32_t o : derived->offsets) {
    if (!derived->geometry.Contains(o)) std::abort();
  }
  if (derived->state_agreeing > derived->state_checked) std::abort();
  if (!analysis::AnalyzeOffsets(derived->offsets, derived->geometry).ok()) std::abort();
  if (!live::SerialDependence(*records, derived->offsets, derived->geometry, 2, 1, 1).ok()) {
    std::abort();
  }
  auto prng = live::CheckPrngStates(*records, derived->offsets, derived->geometry);
  if (!prng.ok() || prng->agreeing > prng->checked ||
      prng->following + prng->unchanged + prng->broken != prng->pairs ||
      prng->max_steps > live::kMaxPrngSteps || prng->mismatches.size() > live::kMaxPrngListed ||
      prng->breaks.size() > live::kMaxPrngListed) {
    std::abort();
  }
  return 0;
}
