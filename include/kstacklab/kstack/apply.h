// Applying a kstack offset as include/linux/randomize_kstack.h does, in a user-space "syscall".
//
// add_random_kstack_offset(): alloca(KSTACK_OFFSET_MAX(offset)) at the top of the entry
// function, kept alive by an empty asm statement that takes the pointer as an input with a
// "memory" clobber, so everything the entry function calls afterwards (the syscall handler)
// has its frame that many bytes lower. KSTACK_OFFSET_MAX on 64-bit kernels since v6.11 is
// `x & 0x3F0`: 64 offsets {0, 16, ..., 1008} bytes (6 bits).
//
// What user space differs in: the x86-64 user-space ABI keeps the stack 16-byte aligned, so
// the compiler rounds an alloca up to 16 bytes (x86-64 kernels are built with an 8-byte
// preferred stack boundary; with the 0x3F0 mask the size is already a multiple of 16, so the
// two agree). The entry function here has no pt_regs below it, runs with interrupts enabled,
// and has no static key: the policy is a template parameter.
#pragma once

#include <cstdint>

namespace kstacklab::kstack {

// KSTACK_OFFSET_MAX(x) on 64-bit kernels (v6.11+, commit 872bb37f6829).
inline constexpr uint32_t kOffsetMask = 0x3F0;
inline constexpr uint32_t kOffsetCount = 64;    // distinct offsets after masking
inline constexpr uint32_t kOffsetGranule = 16;  // bytes between two offsets
constexpr uint32_t KstackOffsetMax(uint32_t x) { return x & kOffsetMask; }
// True for the values KstackOffsetMax can return: {0, 16, ..., 1008}.
constexpr bool IsMaskedOffset(uint32_t offset) {
  return offset % kOffsetGranule == 0 && offset <= kOffsetMask;
}

// The "syscall handler": an out-of-line function (never inlined, no inter-procedural
// analysis) whose frame lies below the offset, as a real handler's does. It writes a volatile
// local — the handler using its stack — and returns that local's address, so a test can see
// the applied offset (like lkdtm's REPORT_STACK).
uintptr_t ModelSyscallHandler();
// The same handler, plus one real getpid(2) issued from inside the offset frame: the model
// syscall then has a kernel round trip to be a fraction of, like the lists' measurements.
uintptr_t ModelSyscallHandlerGetpid();

#if defined(__has_builtin)
#if __has_builtin(__builtin_alloca_uninitialized)
#define KSTACKLAB_KSTACK_ALLOCA(size) __builtin_alloca_uninitialized(size)
#endif
#endif
#ifndef KSTACKLAB_KSTACK_ALLOCA
#define KSTACKLAB_KSTACK_ALLOCA(size) __builtin_alloca(size)  // g++ 12 lacks _uninitialized
#endif

// The applied form of a policy: one user-space "syscall" = the policy's entry step, the
// alloca of KSTACK_OFFSET_MAX(offset) kept alive past the call, the handler, then the policy's
// exit step (the "choose" step) when the design has one. Never inlined, so every call pays a
// real call, a frame and the stack-pointer adjustment. Returns the handler's local address.
// Not AddressSanitizer-instrumented: ASan would pad the alloca with redzones (32-byte
// granules), so sanitizer builds apply the same offsets as release builds.
template <class Policy, uintptr_t (*Handler)() = &ModelSyscallHandler>
[[gnu::noinline, gnu::no_sanitize_address]] uintptr_t KstackSyscall(Policy& policy) {
  const uint32_t offset = policy.Entry();
  void* pad = KSTACKLAB_KSTACK_ALLOCA(KstackOffsetMax(offset));
  asm volatile("" : : "r"(pad) : "memory");
  const uintptr_t frame = Handler();
  if constexpr (requires { policy.Exit(); }) policy.Exit();
  return frame;
}

}  // namespace kstacklab::kstack
