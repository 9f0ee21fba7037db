// The micromm suite's mappings, exposed for tests (workloads/micromm.cc).
//
// A populated anonymous private mapping of `bytes` (a multiple of 2 MiB), built the way David
// Hildenbrand's pte-mapped-folio-benchmarks.c builds it
// (https://gitlab.com/davidhildenbrand/scratchspace/-/raw/main/pte-mapped-folio-benchmarks.c):
//  * h:0 (huge = false): MADV_NOHUGEPAGE, every page written -> page-sized folios, PTE-mapped;
//  * h:1 (huge = true): 2 MiB aligned, MADV_HUGEPAGE, every page written -> PMD-mapped THPs; then
//    MADV_NOHUGEPAGE, which keeps the THPs but stops khugepaged from collapsing split ones back
//    into PMD mappings (measured here without it: 16 MiB of a split 256 MiB mapping re-collapsed
//    every 10 s — 4096 pages per khugepaged pass — which a minutes-long fork row would measure);
//    then each PMD mapping is split while keeping the large folio by mprotect()ing one page of
//    it read-only and back (the kernel selftest's way, tools/testing/selftests/mm/cow.c,
//    THP_RUN_PTE): the VMA split splits the PMD, the merge back leaves the folio PTE-mapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/workloads/workload.h"

namespace kstacklab::workloads {

// Owns the mapping (munmap on destruction unless released).
class AnonMapping {
 public:
  AnonMapping() = default;
  AnonMapping(char* base, size_t bytes) : base_(base), bytes_(bytes) {}
  AnonMapping(const AnonMapping&) = delete;
  AnonMapping& operator=(const AnonMapping&) = delete;
  AnonMapping(AnonMapping&& o) noexcept : base_(o.base_), bytes_(o.bytes_) { o.base_ = nullptr; }
  AnonMapping& operator=(AnonMapping&& o) noexcept;
  ~AnonMapping();
  char* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  // Forgets the mapping (the caller unmapped it).
  void Release() { base_ = nullptr; }

 private:
  char* base_ = nullptr;
  size_t bytes_ = 0;
};

inline constexpr size_t kPmdBytes = size_t{2} << 20;
inline constexpr size_t kDefaultMicrommBytes = size_t{1} << 30;

// Builds the populated mapping. `split` = false stops h:1 before the PMD split (PteMap does it).
Expected<AnonMapping> BuildMapping(size_t bytes, bool huge, bool split = true);

// Splits every PMD mapping of the range into PTEs, keeping the large folios, and marks the range
// MADV_NOHUGEPAGE so khugepaged leaves it PTE-mapped (see above).
Status PteMap(const AnonMapping& m);
// The VmFlags of the VMA holding `base` in /proc/self/smaps ("rd wr mr mw me ac nh", ...).
Expected<std::string> VmaFlags(const void* base);

// "AnonHugePages" of the mapping's VMA in /proc/self/smaps, in bytes (PMD-mapped THP only).
Expected<uint64_t> AnonHugeBytes(const void* base);

// Counts, over `pages` pages sampled evenly across the mapping, those whose page is part of a
// THP (KPF_THP in /proc/kpageflags via the PFN from /proc/self/pagemap). Needs CAP_SYS_ADMIN
// (PFNs read as 0 without it): RuntimeError saying so.
struct FolioSample {
  uint64_t pages = 0;
  uint64_t thp = 0;
};
Expected<FolioSample> SampleThpPages(const AnonMapping& m, uint64_t pages);

// The suite's four rows on a mapping of `bytes` (params gain size_mib unless it is 1 GiB).
// MicrommRows() uses 1 GiB, scaled down when memory is short; `run --param size=…` (each row's
// run_params["size"]) rebuilds them for the size given; tests use a small size.
std::vector<WorkloadDef> MicrommRowsOfSize(size_t bytes, const std::string& note);

// The value of `--param size`: decimal digits with an optional binary unit K, M, G (or KiB, MiB,
// GiB), a positive multiple of 2 MiB ("256M", "1G", "268435456"). Anything else (sign, space,
// fraction, 0, overflow) -> UsageError giving the accepted form.
Expected<size_t> ParseMappingSize(const std::string& text);

// Whether the suite's peak (4 mappings of `bytes` at once) fits in half of MemAvailable
// (`avail_kb`, 0 = unknown: fits); else UsageError giving the largest size that fits.
Status CheckMappingFits(size_t bytes, uint64_t avail_kb);

// "" when THP can be used with MADV_HUGEPAGE here, else the reason (for the skip note).
std::string ThpUnavailableReason();

}  // namespace kstacklab::workloads
