// Kernel stack erasing (STACKLEAK, renamed KSTACK_ERASE in v6.17): a user-space model of
// kernel/kstack_erase.c and include/linux/kstack_erase.h (the v5.19+ algorithm, Mark Rutland's
// rework), and the poison fills an architecture may supply as __stackleak_poison().
//
// The model works on a real buffer standing in for one task's kernel stack (THREAD_SIZE bytes,
// aligned to THREAD_SIZE as a kernel stack is). Addresses are plain uintptr_t, as the kernel's
// `unsigned long` ones are; every address is 8-byte aligned (sizeof(unsigned long) on 64-bit).
//
//   base            low_bound                       lowest_stack            high_bound   top
//   | STACK_END_MAGIC | ...poison... | used by the last syscall ... | pt_regs |
//
// What differs from the kernel: tracking is explicit (TrackStack is called where the compiler
// plugin would have inserted __sanitizer_cov_stack_depth()), the running code's own frame is
// not on the model stack (on_task_stack erase takes the "current stack pointer" as an
// argument), and there is no static key (the sysctl kernel.stack_erasing is modelled by not
// calling Erase at all).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "kstacklab/common/error.h"

namespace kstacklab::erase {

// The model's addresses are integers, as the kernel's `unsigned long` ones are; this is the one
// place they become pointers.
template <class T = uint64_t>
inline T* AddressToPointer(uintptr_t address) {
  return reinterpret_cast<T*>(address);  // NOLINT(performance-no-int-to-ptr): see above
}

// KSTACK_ERASE_POISON (STACKLEAK_POISON): -0xBEEF as unsigned long.
inline constexpr uint64_t kPoison = ~uint64_t{0xBEEF} + 1;
static_assert(kPoison == 0xFFFFFFFFFFFF4111ull);
// KSTACK_ERASE_SEARCH_DEPTH: bytes of consecutive poison that end the boundary scan.
inline constexpr size_t kSearchDepthBytes = 128;
inline constexpr size_t kSearchDepthWords = kSearchDepthBytes / sizeof(uint64_t);  // 16
// STACK_END_MAGIC (include/uapi/linux/magic.h): the lowest word of a task stack, never erased.
inline constexpr uint64_t kStackEndMagic = 0x57AC6E9D;
// THREAD_SIZE of x86-64 and arm64 without KASAN.
inline constexpr size_t kDefaultThreadSize = 16384;
// sizeof(struct pt_regs) on x86-64 (21 registers); task_pt_regs() is the stack top minus this.
inline constexpr size_t kPtRegsSize = 168;

// A poison fill: writes `poison` to every 8-byte word of [low, high). Contract: low <= high,
// both 8-byte aligned (no other alignment is assumed); nothing outside the range is written.
using PoisonFn = void (*)(uintptr_t low, uintptr_t high, uint64_t poison);

// The strategies themselves, for callers that want a direct call (the erase suite's timed
// loops); the table below names them.
void PoisonGeneric(uintptr_t low, uintptr_t high, uint64_t poison);   // one store per iteration
void PoisonUnrolled(uintptr_t low, uintptr_t high, uint64_t poison);  // 8 scalar stores per loop
#if defined(__x86_64__)
void PoisonRepStos(uintptr_t low, uintptr_t high, uint64_t poison);  // rep stosq
void PoisonSimd(uintptr_t low, uintptr_t high, uint64_t poison);     // AVX2: needs SimdAvailable()
void PoisonNt(uintptr_t low, uintptr_t high, uint64_t poison);       // movntdq + sfence
#elif defined(__aarch64__)
void PoisonSimd(uintptr_t low, uintptr_t high, uint64_t poison);  // NEON
#endif
// Whether PoisonSimd may run on this CPU (AVX2 on x86-64; always on arm64; false elsewhere).
bool SimdAvailable();

// One poison strategy. `available()` is the runtime CPU check (e.g. AVX2); a strategy whose
// instructions do not exist on the build architecture is not in the table at all.
struct Strategy {
  const char* name;
  const char* summary;
  PoisonFn fill;
  bool (*available)();
};

inline bool AlwaysAvailable() { return true; }

// The strategies built for this architecture, in table order: generic (the kernel's loop, the
// baseline), unrolled, rep-stos (x86-64), simd (AVX2 on x86-64, NEON on arm64), nt (x86-64).
// constexpr, so the erase suite instantiates its timed loops from it by index (a direct call of
// each fill): adding a strategy is one row here.
inline constexpr Strategy kStrategies[] = {
    {"generic", "the kernel's generic loop: one 8-byte store per iteration (baseline)",
     &PoisonGeneric, &AlwaysAvailable},
    {"unrolled", "memset64-style: eight scalar 8-byte stores per iteration", &PoisonUnrolled,
     &AlwaysAvailable},
#if defined(__x86_64__)
    {"rep-stos", "x86-64 `rep stosq` (fast-string microcode)", &PoisonRepStos, &AlwaysAvailable},
    {"simd", "AVX2 aligned 32-byte stores, 128 bytes per iteration (needs avx2)", &PoisonSimd,
     &SimdAvailable},
    {"nt", "SSE2 non-temporal 16-byte stores (movntdq) + sfence, bypassing the cache", &PoisonNt,
     &AlwaysAvailable},
#elif defined(__aarch64__)
    {"simd", "NEON 16-byte stores, 64 bytes per iteration", &PoisonSimd, &AlwaysAvailable},
#endif
};
std::span<const Strategy> Strategies();
// nullptr when `name` is not in the table.
const Strategy* FindStrategy(std::string_view name);

// The speed reference the strategies are measured against: libc memset of [low, high) with
// the byte 0x41 (not the poison: memset cannot store an 8-byte pattern).
void MemsetReference(uintptr_t low, uintptr_t high);

// stackleak_find_top_of_poison(low, high): scans down from `high` (exclusive) towards `low`
// (inclusive) and stops after kSearchDepthWords consecutive poison words or at `low`. Returns
// the address of the lowest non-poison word seen before the stop, or `high` when the words just
// below `high` are poison up to the stop. Reads memory in [low, high).
uintptr_t FindTopOfPoison(uintptr_t low, uintptr_t high);

// The range one erase poisoned: [low, high).
struct EraseRange {
  uintptr_t low = 0;
  uintptr_t high = 0;
  size_t bytes() const { return high - low; }
};

// One task's kernel stack and its `lowest_stack` tracking (task_struct.lowest_stack).
class TaskStack {
 public:
  // thread_size: a power of two >= 4096; pt_regs_size: a multiple of 8 below thread_size / 2.
  // The new stack is filled with non-poison garbage, then TaskInit() is applied (fork).
  static Expected<std::unique_ptr<TaskStack>> Create(size_t thread_size = kDefaultThreadSize,
                                                     size_t pt_regs_size = kPtRegsSize);
  ~TaskStack();
  TaskStack(const TaskStack&) = delete;
  TaskStack& operator=(const TaskStack&) = delete;

  uintptr_t base() const { return base_; }  // end_of_stack(): holds STACK_END_MAGIC
  size_t thread_size() const { return thread_size_; }
  // stackleak_task_low_bound(): the lowest word that may be erased.
  uintptr_t low_bound() const { return base_ + sizeof(uint64_t); }
  // stackleak_task_high_bound(): task_pt_regs(), the first byte not erased.
  uintptr_t high_bound() const { return base_ + thread_size_ - pt_regs_size_; }
  uintptr_t lowest_stack() const { return lowest_stack_; }
  void set_lowest_stack(uintptr_t sp) { lowest_stack_ = sp; }  // tests craft states with it

  // The word at `address` (8-byte aligned, inside the stack); its setter, for crafted stacks.
  uint64_t word(uintptr_t address) const;
  void set_word(uintptr_t address, uint64_t value);

  // stackleak_task_init() at fork: lowest_stack = low_bound, so the first erase covers the
  // whole stack. Also writes STACK_END_MAGIC at base().
  void TaskInit();
  // stackleak_track_stack() / __sanitizer_cov_stack_depth(): sp rounded up to 8 bytes becomes
  // lowest_stack when it is lower and not below low_bound.
  void TrackStack(uintptr_t sp);
  // __stackleak_erase(on_task_stack): erase_low = FindTopOfPoison(low_bound, lowest_stack);
  // erase_high = current_sp on the task stack, high_bound otherwise; fill [erase_low,
  // erase_high) with kPoison; lowest_stack = high_bound. Returns the range filled (empty when
  // erase_high <= erase_low: the kernel's loop then writes nothing).
  EraseRange Erase(bool on_task_stack, uintptr_t current_sp, PoisonFn fill);

  // One model syscall: entry at high_bound, the handler's frames write `depth` bytes below it
  // (a non-poison pattern) and the deepest frame is tracked; then the erase on the return path,
  // off the task stack (as x86-64 does from the entry trampoline stack). `depth` must be at
  // most high_bound() - low_bound() (CHECKed). Returns the erased range.
  EraseRange Syscall(size_t depth, PoisonFn fill);

 private:
  TaskStack(uintptr_t base, size_t thread_size, size_t pt_regs_size)
      : base_(base), thread_size_(thread_size), pt_regs_size_(pt_regs_size) {}
  uintptr_t base_;
  size_t thread_size_;
  size_t pt_regs_size_;
  uintptr_t lowest_stack_ = 0;
};

}  // namespace kstacklab::erase
