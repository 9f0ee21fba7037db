// The pkeys suite: the user-space analogue of kpkeys page-table hardening and its lazy-MMU
// batching (Kevin Brodsky, "[RFC PATCH v5 00/18] pkeys-based page table hardening", 2025-08-15,
// https://lore.kernel.org/all/20250815085512.2182322-1-kevin.brodsky@arm.com/). A pkey-protected
// page stands for the page tables; a store to it stands for a page-table update.
//
//  * pkeys/wrpkru: one PKRU write (WRPKRU) and read back (RDPKRU): the cost of one switch.
//  * pkeys/update(n) variant unbatched (the baseline): each of n stores opens and closes its own
//    write window (2n WRPKRU); variant batched: one window around all n stores (2 WRPKRU).
//    One timed call = one group of n stores.
//
// x86-64 PKU only. WRPKRU/RDPKRU are issued directly (glibc's pkey_set() adds a read-modify-write
// of PKRU around them). arm64 POE (POR_EL0) is not implemented: no machine here has it.
// Without PKU every row is skipped with the reason.
#include "pkeys.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kstacklab/timing/timing.h"
#include "suites.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace kstacklab::workloads {
namespace {

using Clock = timing::CycleClock;
constexpr size_t kSlots = 512;  // uint64_t slots on one 4 KiB page

#if defined(__x86_64__)
constexpr bool kArchHasPku = true;
inline uint32_t Rdpkru() {
  uint32_t eax, edx;
  asm volatile(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
  return eax;
}
inline void Wrpkru(uint32_t pkru) {
  asm volatile(".byte 0x0f,0x01,0xef" : : "a"(pkru), "c"(0), "d"(0) : "memory");
}
bool CpuHasOspke() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (ecx >> 4) & 1;  // CPUID.(EAX=7,ECX=0):ECX.OSPKE[bit 4]
}
#else
constexpr bool kArchHasPku = false;
inline uint32_t Rdpkru() { return 0; }
inline void Wrpkru(uint32_t) {}
bool CpuHasOspke() { return false; }
#endif

// PKRU bit 2k = access-disable, bit 2k+1 = write-disable for key k.
constexpr uint32_t WriteDisableBit(int key) { return uint32_t{1} << (2 * key + 1); }
constexpr uint32_t KeyBits(int key) { return uint32_t{3} << (2 * key); }

// Puts key's two PKRU bits back to their value in `before`, leaving the other keys' bits as
// they are now. pkey_alloc(…, 0) clears the new key's bits (arch_set_user_pkey_access with
// init_val 0) and pkey_free leaves them so: without this a freed key stays writable in PKRU.
void RestoreKeyBits(int key, uint32_t before) {
  Wrpkru((Rdpkru() & ~KeyBits(key)) | (before & KeyBits(key)));
}

}  // namespace

std::string PkeysUnavailableReason() {
  if (!kArchHasPku) {
    return "protection keys are implemented for x86-64 PKU only (arm64 POE is not supported "
           "by kstacklab yet)";
  }
  if (!CpuHasOspke()) {
    return "this CPU or kernel has no PKU (CPUID OSPKE clear; `pku`/`ospke` absent from "
           "/proc/cpuinfo); run the pkeys rows on an Intel Xeon (Skylake-SP or later) or AMD Zen 3 "
           "or later host with a kernel built with CONFIG_X86_INTEL_MEMORY_PROTECTION_KEYS";
  }
  const uint32_t before = Rdpkru();  // OSPKE is set: RDPKRU does not fault
  int key = ::pkey_alloc(0, 0);
  if (key < 0) return fmt::format("pkey_alloc failed: {}", std::strerror(errno));
  ::pkey_free(key);
  RestoreKeyBits(key, before);  // the probe leaves PKRU as it found it
  return {};
}

Expected<std::unique_ptr<PkeyRegion>> PkeyRegion::Create() {
  if (std::string reason = PkeysUnavailableReason(); !reason.empty()) {
    return RuntimeError(reason);
  }
  std::unique_ptr<PkeyRegion> r(new PkeyRegion());
  r->saved_ = Rdpkru();
  r->key_ = ::pkey_alloc(0, 0);
  if (r->key_ < 0) return RuntimeError(fmt::format("pkey_alloc: {}", std::strerror(errno)));
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* p = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return RuntimeError(fmt::format("mmap: {}", std::strerror(errno)));
  r->slots_ = static_cast<volatile uint64_t*>(p);
  if (::pkey_mprotect(p, page, PROT_READ | PROT_WRITE, r->key_) != 0) {
    return RuntimeError(fmt::format("pkey_mprotect: {}", std::strerror(errno)));
  }
  // The window values keep every other key's bits as they are after the allocation, and give
  // our key full access (open) or write-disable only (closed: reads still allowed).
  r->open_ = Rdpkru() & ~KeyBits(r->key_);
  r->closed_ = r->open_ | WriteDisableBit(r->key_);
  r->CloseWindow();
  return r;
}

PkeyRegion::~PkeyRegion() {
  if (key_ >= 0) RestoreKeyBits(key_, saved_);
  if (slots_) ::munmap(const_cast<uint64_t*>(slots_), static_cast<size_t>(::sysconf(_SC_PAGESIZE)));
  if (key_ >= 0) ::pkey_free(key_);
}

void PkeyRegion::OpenWindow() const { Wrpkru(open_); }
void PkeyRegion::CloseWindow() const { Wrpkru(closed_); }
uint32_t PkeyRegion::ReadPkru() const { return Rdpkru(); }

namespace {

// Keeps a value alive without a store to memory.
[[gnu::always_inline]] inline void Keep(uint32_t v) { asm volatile("" : : "r"(v)); }

void CallWrpkru(void* state) {
  auto* r = static_cast<PkeyRegion*>(state);
  Wrpkru(r->closed_pkru());
  Keep(Rdpkru());
}

template <size_t kN>
void CallUnbatched(void* state) {
  auto* r = static_cast<PkeyRegion*>(state);
  volatile uint64_t* slots = r->slots();
  for (size_t i = 0; i < kN; ++i) {
    Wrpkru(r->open_pkru());
    slots[i] = i;
    Wrpkru(r->closed_pkru());
  }
}

template <size_t kN>
void CallBatched(void* state) {
  auto* r = static_cast<PkeyRegion*>(state);
  volatile uint64_t* slots = r->slots();
  Wrpkru(r->open_pkru());
  for (size_t i = 0; i < kN; ++i) slots[i] = i;
  Wrpkru(r->closed_pkru());
}

// Creates the region and checks the call leaves PKRU closed and writes what it claims.
template <auto kCall, size_t kN>
Expected<std::shared_ptr<void>> Setup() {
  auto r = PkeyRegion::Create();
  if (!r.ok()) return r.error();
  kCall(r->get());
  if ((*r)->ReadPkru() != (*r)->closed_pkru()) {
    return RuntimeError(fmt::format("PKRU is {:#x} after the call, expected {:#x}",
                                    (*r)->ReadPkru(), (*r)->closed_pkru()));
  }
  for (size_t i = 0; i < kN; ++i) {
    if ((*r)->slots()[i] != i) return RuntimeError(fmt::format("slot {} was not written", i));
  }
  return std::shared_ptr<void>(std::move(*r));
}

template <auto kCall, size_t kN>
WorkloadDef PkeysRow(const char* name, const char* variant, const char* summary) {
  WorkloadDef w;
  w.name = name;
  w.variant = variant;
  if (kN > 0) w.params = Json{{"n", kN}};
  w.summary = summary;
  w.setup = &Setup<kCall, kN>;
  w.percall = &sampler::TimePerCall<Clock, kCall>;
  w.loop = &sampler::TimeLoop<Clock, kCall>;
  w.unavailable = PkeysUnavailableReason;
  return w;
}

template <size_t kN>
void AddUpdateRows(std::vector<WorkloadDef>* rows) {
  WorkloadDef u = PkeysRow<CallUnbatched<kN>, kN>(
      "pkeys/update", "unbatched", "n stores to a pkey-protected page, a write window each");
  u.baseline = true;
  rows->push_back(std::move(u));
  rows->push_back(PkeysRow<CallBatched<kN>, kN>(
      "pkeys/update", "batched", "n stores to a pkey-protected page, one write window"));
}

}  // namespace

std::vector<WorkloadDef> PkeysRows() {
  std::vector<WorkloadDef> rows;
  rows.push_back(PkeysRow<CallWrpkru, 0>("pkeys/wrpkru", "",
                                         "one PKRU write (WRPKRU) and read back (RDPKRU)"));
  AddUpdateRows<1>(&rows);
  AddUpdateRows<16>(&rows);
  AddUpdateRows<256>(&rows);
  return rows;
}

}  // namespace kstacklab::workloads
