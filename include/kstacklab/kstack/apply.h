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

// The offsets a kernel can apply: KSTACK_OFFSET_MAX's mask, then the compiler's rounding of the
// alloca size up to the kernel's stack alignment (kernel-facts §5.2). The models are of the v6.11+
// geometry; the live sampler meets every era (Debian 12's 6.1 kernel has the old one).
struct OffsetGeometry {
  uint32_t mask = kOffsetMask;      // KSTACK_OFFSET_MAX(x) = x & mask
  uint32_t align = kOffsetGranule;  // the alloca rounded up to this many bytes (a power of two)
  const char* name = "";            // era and arch, one line

  // The offset a state x gives.
  constexpr uint32_t Apply(uint32_t x) const { return ((x & mask) + align - 1) & ~(align - 1); }
  constexpr uint32_t max() const { return Apply(mask); }
  constexpr uint32_t count() const { return max() / align + 1; }  // distinct offsets
  constexpr bool Contains(uint32_t offset) const { return offset % align == 0 && offset <= max(); }
  // P(offset = bin * align) when the low 10 bits of the state are uniform: the share of the 1024
  // values x & 0x3FF that Apply maps there (1/64 each for v6.11+; 1/1024 for offset 0 and 7/1024
  // for 1024 before it, on x86-64).
  constexpr double Probability(uint32_t bin) const {
    uint32_t hits = 0;
    for (uint32_t x = 0; x < 1024; ++x) hits += Apply(x) == bin * align ? 1 : 0;
    return hits / 1024.0;
  }
};

// 64-bit kernels since v6.11 (commit 872bb37f6829): x & 0x3F0, already 16-byte aligned.
inline constexpr OffsetGeometry kGeometryV611{
    kOffsetMask, kOffsetGranule, "v6.11+ 64-bit: x & 0x3F0, 64 offsets {0, 16, ..., 1008}"};
// v5.13-v6.10 on x86-64: x & 0x3FF, rounded up to the 8-byte stack alignment the kernel is
// built with (-mpreferred-stack-boundary=3): 129 offsets, offset 0 and 1024 rarer than the rest.
inline constexpr OffsetGeometry kGeometryPreV611X86{
    0x3FF, 8, "v5.13-v6.10 x86-64: x & 0x3FF rounded up to 8 bytes, 129 offsets {0, 8, ..., 1024}"};
// v5.13-v6.10 with a 16-byte stack alignment (arm64): 65 offsets.
inline constexpr OffsetGeometry kGeometryPreV611Align16{
    0x3FF, 16, "v5.13-v6.10 16-byte aligned (arm64): x & 0x3FF rounded up to 16 bytes, 65 offsets"};
inline constexpr uint32_t kMaxOffsetCount = 129;  // the most offsets of any geometry above

static_assert(kGeometryV611.count() == kOffsetCount && kGeometryV611.max() == kOffsetMask);
static_assert(kGeometryPreV611X86.count() == kMaxOffsetCount);

// True for the values KstackOffsetMax can return: {0, 16, ..., 1008}.
constexpr bool IsMaskedOffset(uint32_t offset) { return kGeometryV611.Contains(offset); }

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
