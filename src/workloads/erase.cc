// The erase suite: the cost of kernel stack erasing (kstack_erase.c), modelled in user space
// (docs/models.md "Stack erasing").
//
//  * erase/poison(depth):<strategy>  one poison fill of `depth` bytes, the top of a 16 KiB
//    stack-aligned buffer, by one strategy (generic = the kernel's loop, the baseline), plus a
//    `memset` row: libc memset of the same bytes, the speed reference.
//  * erase/syscall(depth):<strategy> one model syscall on a model task stack (erase::TaskStack):
//    the handler writes `depth` bytes below pt_regs and issues a real getpid(2), then the
//    return path runs the v5.19+ erase (the 128-byte boundary scan, then the fill by the
//    strategy). Variant `off` (the baseline) is the same without the erase, as with
//    kernel.stack_erasing=0: the erase cost shows as a fraction of a kernel round trip, as in
//    the s390 figures (getpid with a forced deep frame: 3x without erasing before the fast
//    __stackleak_poison(), +25 % with it; the s390-6.4-1 pull of commit 2a405f6bb3a5).
#include "kstacklab/erase/erase.h"

#include <fmt/format.h>
#include <sys/syscall.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "kstacklab/common/raw_syscall.h"
#include "kstacklab/timing/timing.h"
#include "suites.h"

namespace kstacklab::workloads {
namespace {

using Clock = timing::CycleClock;
using erase::PoisonFn;

constexpr size_t kPoisonDepths[] = {256, 1024, 4096, 8192, 16384};
// The model stack (16 KiB, 168 bytes of pt_regs, the magic word) has 16208 erasable bytes.
constexpr size_t kSyscallDepths[] = {256, 1024, 4096, 8192,
                                     erase::kDefaultThreadSize - erase::kPtRegsSize - 8};

// --- erase/poison -------------------------------------------------------------------------------

struct PoisonState {
  void* buffer = nullptr;  // kDefaultThreadSize bytes, aligned like a kernel stack
  uintptr_t low = 0;
  uintptr_t high = 0;
  ~PoisonState() { std::free(buffer); }
};

template <PoisonFn Fill>
void CallPoison(void* p) {
  auto* s = static_cast<PoisonState*>(p);
  Fill(s->low, s->high, erase::kPoison);
}

void CallMemset(void* p) {
  auto* s = static_cast<PoisonState*>(p);
  erase::MemsetReference(s->low, s->high);
}

// Allocates the buffer, fills once and checks: the range holds exactly the fill, the bytes
// below it are untouched.
template <PoisonFn Fill>
Expected<std::shared_ptr<void>> SetupPoison(size_t depth, const char* name) {
  const erase::Strategy* st = erase::FindStrategy(name);
  if (st != nullptr && !st->available()) {
    return RuntimeError(fmt::format("strategy {}: not supported by this CPU", name));
  }
  auto s = std::make_shared<PoisonState>();
  s->buffer = std::aligned_alloc(erase::kDefaultThreadSize, erase::kDefaultThreadSize);
  if (s->buffer == nullptr) return RuntimeError("cannot allocate the 16 KiB poison buffer");
  std::memset(s->buffer, 0x5A, erase::kDefaultThreadSize);
  s->high = reinterpret_cast<uintptr_t>(s->buffer) + erase::kDefaultThreadSize;
  s->low = s->high - depth;
  CallPoison<Fill>(s.get());
  const auto* bytes = static_cast<const unsigned char*>(s->buffer);
  for (size_t i = 0; i < erase::kDefaultThreadSize; i += sizeof(uint64_t)) {
    uint64_t w;
    std::memcpy(&w, bytes + i, sizeof w);
    const bool inside = i >= erase::kDefaultThreadSize - depth;
    const uint64_t want = inside ? erase::kPoison : 0x5A5A5A5A5A5A5A5Aull;
    if (w != want) {
      return RuntimeError(fmt::format("strategy {} at depth {}: word at +{} is {:#x}, not {:#x}",
                                      name, depth, i, w, want));
    }
  }
  return std::shared_ptr<void>(s);
}

Expected<std::shared_ptr<void>> SetupMemset(size_t depth) {
  auto s = std::make_shared<PoisonState>();
  s->buffer = std::aligned_alloc(erase::kDefaultThreadSize, erase::kDefaultThreadSize);
  if (s->buffer == nullptr) return RuntimeError("cannot allocate the 16 KiB poison buffer");
  s->high = reinterpret_cast<uintptr_t>(s->buffer) + erase::kDefaultThreadSize;
  s->low = s->high - depth;
  return std::shared_ptr<void>(s);
}

// --- erase/syscall ------------------------------------------------------------------------------

struct SyscallState {
  std::unique_ptr<erase::TaskStack> stack;
  size_t depth = 0;
};

// The handler's use of the stack without the erase (kernel.stack_erasing=0).
[[gnu::noinline]] void UseStack(erase::TaskStack& stack, size_t depth) {
  const uintptr_t sp = stack.high_bound() - depth;
  std::memset(erase::AddressToPointer<void>(sp), 0x5A, depth);
  asm volatile("" : : "r"(sp) : "memory");
  stack.TrackStack(sp);
  stack.set_lowest_stack(stack.high_bound());  // what the erase would have reset
}

template <PoisonFn Fill>
void CallSyscall(void* p) {
  auto* s = static_cast<SyscallState*>(p);
  const long pid = RawSyscall0(SYS_getpid);
  asm volatile("" : : "r"(pid));
  (void)s->stack->Syscall(s->depth, Fill);
}

void CallSyscallOff(void* p) {
  auto* s = static_cast<SyscallState*>(p);
  const long pid = RawSyscall0(SYS_getpid);
  asm volatile("" : : "r"(pid));
  UseStack(*s->stack, s->depth);
}

// Boots the model stack (fork: the first erase poisons it whole), then checks one syscall:
// exactly the top `depth` bytes are erased and the stack below is all poison.
template <PoisonFn Fill>
Expected<std::shared_ptr<void>> SetupSyscall(size_t depth, const char* name, bool erase) {
  const erase::Strategy* st = erase::FindStrategy(name);
  if (st != nullptr && !st->available()) {
    return RuntimeError(fmt::format("strategy {}: not supported by this CPU", name));
  }
  auto stack = erase::TaskStack::Create();
  if (!stack.ok()) return stack.error();
  auto s = std::make_shared<SyscallState>();
  s->stack = std::move(*stack);
  s->depth = depth;
  (void)s->stack->Erase(false, 0, &erase::PoisonGeneric);
  if (RawSyscall0(SYS_getpid) != ::getpid()) return RuntimeError("raw getpid disagrees with libc");
  if (erase) {
    const erase::EraseRange r = s->stack->Syscall(depth, Fill);
    if (r.low != s->stack->high_bound() - depth || r.high != s->stack->high_bound()) {
      return RuntimeError(fmt::format("{}: erased {} bytes, expected {}", name, r.bytes(), depth));
    }
    for (uintptr_t a = s->stack->low_bound(); a < s->stack->high_bound(); a += 8) {
      if (s->stack->word(a) != erase::kPoison) {
        return RuntimeError(fmt::format("{}: a word is not poison after the erase", name));
      }
    }
  }
  return std::shared_ptr<void>(s);
}

// --- rows ---------------------------------------------------------------------------------------

template <size_t I>
void AddPoison(std::vector<WorkloadDef>& rows, size_t depth) {
  constexpr PoisonFn kFill = erase::kStrategies[I].fill;
  const erase::Strategy& st = erase::kStrategies[I];
  const char* name = st.name;
  WorkloadDef w;
  w.name = "erase/poison";
  w.variant = name;
  w.params = Json{{"depth", depth}};
  w.summary = fmt::format("poison fill of `depth` bytes: {}", st.summary);
  w.baseline = kFill == &erase::PoisonGeneric;
  w.setup = [depth, name] { return SetupPoison<kFill>(depth, name); };
  w.percall = &sampler::TimePerCall<Clock, CallPoison<kFill>>;
  w.loop = &sampler::TimeLoop<Clock, CallPoison<kFill>>;
  rows.push_back(std::move(w));
}

template <size_t I>
void AddSyscall(std::vector<WorkloadDef>& rows, size_t depth) {
  constexpr PoisonFn kFill = erase::kStrategies[I].fill;
  const erase::Strategy& st = erase::kStrategies[I];
  const char* name = st.name;
  WorkloadDef w;
  w.name = "erase/syscall";
  w.variant = name;
  w.params = Json{{"depth", depth}};
  w.summary = fmt::format(
      "model syscall (use `depth` bytes, real getpid, scan + erase) with the {} fill", st.name);
  w.setup = [depth, name] { return SetupSyscall<kFill>(depth, name, true); };
  w.percall = &sampler::TimePerCall<Clock, CallSyscall<kFill>>;
  w.loop = &sampler::TimeLoop<Clock, CallSyscall<kFill>>;
  rows.push_back(std::move(w));
}

// The rows of every strategy of erase::kStrategies, in table order, each timing its fill by
// direct call (one template instantiation per index).
template <size_t... I>
void AddPoisonRows(std::vector<WorkloadDef>& rows, size_t depth, std::index_sequence<I...>) {
  (AddPoison<I>(rows, depth), ...);
}
template <size_t... I>
void AddSyscallRows(std::vector<WorkloadDef>& rows, size_t depth, std::index_sequence<I...>) {
  (AddSyscall<I>(rows, depth), ...);
}
constexpr auto kStrategyIndices = std::make_index_sequence<std::size(erase::kStrategies)>();

}  // namespace

std::vector<WorkloadDef> EraseRows() {
  std::vector<WorkloadDef> rows;
  for (size_t depth : kPoisonDepths) {
    AddPoisonRows(rows, depth, kStrategyIndices);
    WorkloadDef m;
    m.name = "erase/poison";
    m.variant = "memset";
    m.params = Json{{"depth", depth}};
    m.summary = "libc memset of the same bytes (a byte fill, not the poison): the speed reference";
    m.setup = [depth] { return SetupMemset(depth); };
    m.percall = &sampler::TimePerCall<Clock, CallMemset>;
    m.loop = &sampler::TimeLoop<Clock, CallMemset>;
    rows.push_back(std::move(m));
  }
  for (size_t depth : kSyscallDepths) {
    WorkloadDef off;
    off.name = "erase/syscall";
    off.variant = "off";
    off.params = Json{{"depth", depth}};
    off.summary = "model syscall (use `depth` bytes, real getpid), no erase: stack_erasing=0";
    off.baseline = true;
    off.setup = [depth] { return SetupSyscall<&erase::PoisonGeneric>(depth, "off", false); };
    off.percall = &sampler::TimePerCall<Clock, CallSyscallOff>;
    off.loop = &sampler::TimeLoop<Clock, CallSyscallOff>;
    rows.push_back(std::move(off));
    AddSyscallRows(rows, depth, kStrategyIndices);
  }
  return rows;
}

}  // namespace kstacklab::workloads
