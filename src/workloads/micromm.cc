// The micromm suite: fork() and munmap() of a populated anonymous mapping (1 GiB by default,
// scaled down with a note when memory is short; `run --param size=…` sets it),
// with page-sized folios (h:0) or PTE-mapped THP folios (h:1), as the kpkeys page-table
// hardening series was judged (Kevin Brodsky, "[RFC PATCH v5 00/18] pkeys-based page table
// hardening", 2025-08-15,
// https://lore.kernel.org/all/20250815085512.2182322-1-kevin.brodsky@arm.com/). Unit: us.
//
//  * micromm/fork: the timed call is fork() in the parent; the child _exit()s at once and is
//    reaped after the second timer read, outside the timed region. fork copies the mapping's
//    page tables (and takes a reference per folio), which is what page-table hardening slows.
//  * micromm/munmap: the timed call is munmap() of the whole range. Every call needs a fresh
//    mapping: this row's own per-call loop builds it before the first timer read, so the timed
//    region stays timer, munmap, timer, store.
//
// A fork of 1 GiB takes milliseconds and a fresh 1 GiB mapping a good fraction of a second, so
// the rows cap the run's settings: at most kMaxCalls timed calls per repetition, 1 warm-up call
// (none for munmap) and kMaxRepetitions repetitions, whatever --iterations/--warmup/--repetitions
// ask for (docs/micromm.md).
#include "micromm.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "kstacklab/common/text.h"
#include "kstacklab/timing/timing.h"
#include "suites.h"

namespace kstacklab::workloads {

AnonMapping& AnonMapping::operator=(AnonMapping&& o) noexcept {
  if (this != &o) {
    if (base_) ::munmap(base_, bytes_);
    base_ = o.base_;
    bytes_ = o.bytes_;
    o.base_ = nullptr;
  }
  return *this;
}

AnonMapping::~AnonMapping() {
  if (base_) ::munmap(base_, bytes_);
}

namespace {

using Clock = timing::CycleClock;

size_t PageBytes() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

std::string ReadText(const char* path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Reads 8 bytes at `offset` of an open file.
bool ReadU64At(int fd, uint64_t offset, uint64_t* out) {
  return ::pread(fd, out, sizeof *out, static_cast<off_t>(offset)) ==
         static_cast<ssize_t>(sizeof *out);
}

}  // namespace

Expected<AnonMapping> BuildMapping(size_t bytes, bool huge, bool split) {
  if (bytes == 0 || bytes % kPmdBytes != 0) {
    return UsageError(fmt::format("mapping size {} is not a positive multiple of 2 MiB", bytes));
  }
  const size_t page = PageBytes();
  const size_t reserve = huge ? bytes + kPmdBytes : bytes;
  void* raw = ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    return RuntimeError(
        fmt::format("mmap of {} MiB failed: {}", reserve >> 20, std::strerror(errno)));
  }
  char* base = static_cast<char*>(raw);
  if (huge) {  // 2 MiB alignment, so every PMD of the range can hold a THP
    const auto addr = reinterpret_cast<uintptr_t>(base);
    const size_t head = (kPmdBytes - addr % kPmdBytes) % kPmdBytes;
    if (head) ::munmap(base, head);
    if (kPmdBytes - head) ::munmap(base + head + bytes, kPmdBytes - head);
    base += head;
  }
  AnonMapping m(base, bytes);
  if (::madvise(base, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) {
    return RuntimeError(fmt::format("madvise({}) failed: {}",
                                    huge ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE",
                                    std::strerror(errno)));
  }
  for (size_t off = 0; off < bytes; off += page) {
    *static_cast<volatile char*>(base + off) = 1;
  }
  if (huge && split) {
    if (Status st = PteMap(m); !st.ok()) return st.error();
  }
  return m;
}

Status PteMap(const AnonMapping& m) {
  // First stop khugepaged from collapsing the folios back into PMD mappings — between the split
  // and the end of the rows. MADV_NOHUGEPAGE only sets VM_NOHUGEPAGE: the THPs stay.
  if (::madvise(m.base(), m.bytes(), MADV_NOHUGEPAGE) != 0) {
    return RuntimeError(fmt::format("madvise(MADV_NOHUGEPAGE) before the PMD split failed: {}",
                                    std::strerror(errno)));
  }
  const size_t page = PageBytes();
  for (size_t off = 0; off < m.bytes(); off += kPmdBytes) {
    char* p = m.base() + off + page;
    if (::mprotect(p, page, PROT_READ) != 0 || ::mprotect(p, page, PROT_READ | PROT_WRITE) != 0) {
      return RuntimeError(fmt::format("mprotect to PTE-map the THPs: {}", std::strerror(errno)));
    }
  }
  return OkStatus();
}

namespace {

// The value of `key` ("AnonHugePages", "VmFlags") in the /proc/self/smaps entry of the VMA that
// holds `base`, trimmed.
Expected<std::string> SmapsField(const void* base, const std::string& key) {
  std::ifstream in("/proc/self/smaps");
  if (!in) return RuntimeError("cannot read /proc/self/smaps");
  const auto want = reinterpret_cast<uintptr_t>(base);
  const std::string prefix = key + ":";
  std::string line;
  bool in_vma = false;
  while (std::getline(in, line)) {
    uintptr_t start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &end) == 2 &&
        line.find('-') < line.find(' ')) {
      in_vma = start <= want && want < end;
      continue;
    }
    if (in_vma && line.rfind(prefix, 0) == 0) return Trim(line.substr(prefix.size()));
  }
  return RuntimeError(fmt::format("no {} line for the mapping at {} in smaps", key, base));
}

}  // namespace

Expected<uint64_t> AnonHugeBytes(const void* base) {
  std::string value;
  KSTACKLAB_ASSIGN_OR_RETURN(value, SmapsField(base, "AnonHugePages"));
  unsigned long kb = 0;
  if (std::sscanf(value.c_str(), "%lu kB", &kb) != 1) {
    return RuntimeError(fmt::format("AnonHugePages in smaps is '{}', not 'N kB'", value));
  }
  return uint64_t{kb} * 1024;
}

Expected<std::string> VmaFlags(const void* base) { return SmapsField(base, "VmFlags"); }

Expected<FolioSample> SampleThpPages(const AnonMapping& m, uint64_t pages) {
  constexpr uint64_t kPfnMask = (uint64_t{1} << 55) - 1;
  constexpr uint64_t kPresent = uint64_t{1} << 63;
  constexpr int kKpfThp = 22;  // include/uapi/linux/kernel-page-flags.h
  int pagemap = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (pagemap < 0) return RuntimeError("cannot open /proc/self/pagemap");
  int flags = ::open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
  if (flags < 0) {
    ::close(pagemap);
    return RuntimeError(
        fmt::format("cannot open /proc/kpageflags ({}): needs root", std::strerror(errno)));
  }
  const size_t page = PageBytes();
  const uint64_t total = m.bytes() / page;
  pages = std::clamp<uint64_t>(pages, 1, total);
  FolioSample s;
  Status st = OkStatus();
  for (uint64_t k = 0; k < pages && st.ok(); ++k) {
    // Spread the samples, and land on varied offsets inside a 2 MiB block.
    const uint64_t index = k * total / pages + (k * 37) % (kPmdBytes / page);
    const auto vaddr = reinterpret_cast<uintptr_t>(m.base()) + std::min(index, total - 1) * page;
    uint64_t entry = 0, kflags = 0;
    if (!ReadU64At(pagemap, vaddr / page * 8, &entry) || !(entry & kPresent)) {
      st = RuntimeError(fmt::format("page at {:#x} is not present in pagemap", vaddr));
    } else if ((entry & kPfnMask) == 0) {
      st = RuntimeError("pagemap hides PFNs (needs CAP_SYS_ADMIN)");
    } else if (!ReadU64At(flags, (entry & kPfnMask) * 8, &kflags)) {
      st = RuntimeError("cannot read /proc/kpageflags");
    } else {
      ++s.pages;
      if (kflags >> kKpfThp & 1) ++s.thp;
    }
  }
  ::close(pagemap);
  ::close(flags);
  if (!st.ok()) return st.error();
  return s;
}

std::string ThpUnavailableReason() {
  std::string enabled = ReadText("/sys/kernel/mm/transparent_hugepage/enabled");
  if (enabled.empty()) {
    return "no transparent huge pages (no /sys/kernel/mm/transparent_hugepage/enabled: kernel "
           "built without CONFIG_TRANSPARENT_HUGEPAGE)";
  }
  if (enabled.find("[never]") != std::string::npos) {
    return "transparent huge pages are off (/sys/kernel/mm/transparent_hugepage/enabled is "
           "[never]; write madvise to it to run h:1)";
  }
  if (::prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1) {
    return "THP is disabled for this process (prctl PR_SET_THP_DISABLE inherited from a parent)";
  }
  return {};
}

namespace {

// The suite's caps on the run's settings (see the file comment).
constexpr uint64_t kMaxCalls = 3;
constexpr int kMaxRepetitions = 10;

struct ForkState {
  AnonMapping mapping;
  uint64_t failures = 0;  // fork() returned -1 (reported as the metric "failures")
};

struct MunmapState {
  size_t bytes = 0;
  bool huge = false;
  AnonMapping next;  // the mapping the next call unmaps (built before its timer read)
  uint64_t failures = 0;
};

// One fork per call; the child exits at once and is reaped after the timed region.
void TimeFork(void* state, uint64_t n, uint64_t* out_ticks) {
  auto* s = static_cast<ForkState*>(state);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t t0 = Clock::Now();
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    const uint64_t t1 = Clock::Now();
    out_ticks[i] = t1 - t0;
    if (pid < 0) {
      ++s->failures;
      continue;
    }
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

// One munmap of the whole fresh mapping per call; the mapping is built before the timer read.
void TimeMunmap(void* state, uint64_t n, uint64_t* out_ticks) {
  auto* s = static_cast<MunmapState*>(state);
  for (uint64_t i = 0; i < n; ++i) {
    if (!s->next.base()) {
      auto m = BuildMapping(s->bytes, s->huge);
      if (!m.ok()) {
        ++s->failures;
        out_ticks[i] = 0;
        continue;
      }
      s->next = std::move(*m);
    }
    char* base = s->next.base();
    const size_t bytes = s->next.bytes();
    const uint64_t t0 = Clock::Now();
    ::munmap(base, bytes);
    const uint64_t t1 = Clock::Now();
    out_ticks[i] = t1 - t0;
    s->next.Release();
  }
}

template <class State>
std::map<std::string, double> Failures(void* state) {
  auto* s = static_cast<State*>(state);
  std::map<std::string, double> m;
  if (s->failures) m["failures"] = static_cast<double>(s->failures);
  s->failures = 0;
  return m;
}

// Builds the mapping and checks it is what the row claims (smaps; kpageflags as root).
Expected<AnonMapping> VerifiedMapping(size_t bytes, bool huge) {
  auto m = BuildMapping(bytes, /*huge=*/huge, /*split=*/false);
  if (!m.ok()) return m.error();
  auto thp = AnonHugeBytes(m->base());
  if (!thp.ok()) return thp.error();
  if (!huge) {
    if (*thp != 0) {
      return RuntimeError(
          fmt::format("h:0 mapping holds {} KiB of THP despite MADV_NOHUGEPAGE", *thp >> 10));
    }
    return m;
  }
  if (*thp * 10 < bytes * 9) {
    return RuntimeError(fmt::format(
        "only {} of {} MiB got huge pages (memory too fragmented; retry, or compact with "
        "`echo 1 > /proc/sys/vm/compact_memory`)",
        *thp >> 20, bytes >> 20));
  }
  if (Status st = PteMap(*m); !st.ok()) return st.error();
  auto after = AnonHugeBytes(m->base());
  if (!after.ok()) return after.error();
  if (*after != 0) {
    return RuntimeError(
        fmt::format("h:1: {} KiB still PMD-mapped after the mprotect split", *after >> 10));
  }
  // As root, check the folios stayed large; without root this check is not possible.
  if (auto sample = SampleThpPages(*m, 256); sample.ok() && sample->thp * 10 < sample->pages * 9) {
    return RuntimeError(
        fmt::format("h:1: only {} of {} sampled pages are still THP after the "
                    "split (the folios were split too)",
                    sample->thp, sample->pages));
  }
  return m;
}

uint64_t MemAvailableKb() {
  std::string meminfo = ReadText("/proc/meminfo");
  auto pos = meminfo.find("MemAvailable:");
  if (pos == std::string::npos) return 0;
  return std::strtoull(meminfo.c_str() + pos + 13, nullptr, 10);
}

// The suite's peak — two fork mappings held by their rows and two munmap mappings, one per
// row — must fit in half of MemAvailable (unknown, 0: anything fits).
bool MappingFits(size_t bytes, uint64_t avail_kb) {
  return avail_kb == 0 || bytes <= avail_kb * 1024 / 2 / 4;
}

// The mapping size: 1 GiB, halved while the suite's peak would not fit.
size_t MappingBytes(std::string* note) {
  const uint64_t avail_kb = MemAvailableKb();
  size_t bytes = kDefaultMicrommBytes;
  while (bytes > kPmdBytes && !MappingFits(bytes, avail_kb)) bytes /= 2;
  if (bytes != kDefaultMicrommBytes) {
    *note = fmt::format("mapping scaled down to {} MiB from 1024 MiB: MemAvailable is {} MiB",
                        bytes >> 20, avail_kb >> 10);
  }
  return bytes;
}

// "1 GiB", "256 MiB".
std::string SizeText(size_t bytes) {
  return bytes % (size_t{1} << 30) == 0 ? fmt::format("{} GiB", bytes >> 30)
                                        : fmt::format("{} MiB", bytes >> 20);
}

WorkloadDef MicrommRow(const char* name, bool huge, size_t bytes, const std::string& note) {
  WorkloadDef w;
  w.name = name;
  w.params = Json{{"h", huge ? 1 : 0}};
  if (bytes != kDefaultMicrommBytes) w.params["size_mib"] = bytes >> 20;
  w.unit = "us";
  w.note = note;
  w.max_iterations = kMaxCalls;
  w.max_repetitions = kMaxRepetitions;
  if (huge) w.unavailable = ThpUnavailableReason;
  return w;
}

}  // namespace

std::vector<WorkloadDef> MicrommRows() {
  std::string note;
  const size_t bytes = MappingBytes(&note);
  return MicrommRowsOfSize(bytes, note);
}

Expected<size_t> ParseMappingSize(const std::string& text) {
  const std::string form = fmt::format(
      "size takes a positive multiple of 2 MiB: digits with an optional K, M or G (binary: "
      "KiB, MiB, GiB), e.g. 256M, 1G or 268435456, not '{}'",
      text);
  size_t i = 0;
  uint64_t n = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (n > (UINT64_MAX - 9) / 10) return UsageError(form);
    n = n * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (i == 0) return UsageError(form);
  std::string unit = text.substr(i);
  int shift = 0;
  if (!unit.empty()) {
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
    shift = u == 'K' ? 10 : u == 'M' ? 20 : u == 'G' ? 30 : -1;
    if (shift < 0 || (unit.size() != 1 && unit.substr(1) != "iB")) return UsageError(form);
  }
  if (n > (SIZE_MAX >> shift)) return UsageError(form);
  const size_t bytes = static_cast<size_t>(n) << shift;
  if (bytes == 0 || bytes % kPmdBytes != 0) return UsageError(form);
  return bytes;
}

Status CheckMappingFits(size_t bytes, uint64_t avail_kb) {
  if (MappingFits(bytes, avail_kb)) return OkStatus();
  const uint64_t most = avail_kb * 1024 / 2 / 4 / kPmdBytes * kPmdBytes;
  return UsageError(fmt::format(
      "the micromm suite holds 4 mappings of {} MiB at once, more than half of MemAvailable "
      "({} MiB); give at most {} MiB",
      bytes >> 20, avail_kb >> 10, most >> 20));
}

std::vector<WorkloadDef> MicrommRowsOfSize(size_t bytes, const std::string& note) {
  std::vector<WorkloadDef> rows;
  const std::string size = SizeText(bytes);
  for (bool huge : {false, true}) {
    WorkloadDef w = MicrommRow("micromm/fork", huge, bytes, note);
    w.summary = fmt::format("fork() with a populated {} mapping of {}", size,
                            huge ? "PTE-mapped THP folios" : "page-sized folios");
    w.setup = [bytes, huge]() -> Expected<std::shared_ptr<void>> {
      auto m = VerifiedMapping(bytes, huge);
      if (!m.ok()) return m.error();
      auto s = std::make_shared<ForkState>();
      s->mapping = std::move(*m);
      return std::shared_ptr<void>(s);
    };
    w.percall = &TimeFork;
    w.loop = &sampler::SumOfPerCallTicks<&TimeFork>;
    w.max_warmup = 1;
    w.extra_metrics = &Failures<ForkState>;
    rows.push_back(std::move(w));
  }
  for (bool huge : {false, true}) {
    WorkloadDef w = MicrommRow("micromm/munmap", huge, bytes, note);
    w.summary = fmt::format("munmap() of a populated {} mapping of {}", size,
                            huge ? "PTE-mapped THP folios" : "page-sized folios");
    w.setup = [bytes, huge]() -> Expected<std::shared_ptr<void>> {
      auto m = VerifiedMapping(bytes, huge);
      if (!m.ok()) return m.error();
      auto s = std::make_shared<MunmapState>();
      s->bytes = bytes;
      s->huge = huge;
      s->next = std::move(*m);
      return std::shared_ptr<void>(s);
    };
    w.percall = &TimeMunmap;
    w.loop = &sampler::SumOfPerCallTicks<&TimeMunmap>;
    w.max_warmup = 0;
    w.extra_metrics = &Failures<MunmapState>;
    rows.push_back(std::move(w));
  }
  // run --param size=...: the same row on a mapping of that size.
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].run_params["size"] = [i](const std::string& value) -> Expected<WorkloadDef> {
      auto b = ParseMappingSize(value);
      if (!b.ok()) return b.error();
      KSTACKLAB_RETURN_IF_ERROR(CheckMappingFits(*b, MemAvailableKb()));
      return MicrommRowsOfSize(*b, "")[i];
    };
  }
  return rows;
}

}  // namespace kstacklab::workloads
