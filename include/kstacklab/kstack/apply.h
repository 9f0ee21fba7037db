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

// The offsets a kernel can apply: the bits of the offset state that reach the alloca, then the
// compiler's rounding of the alloca size up to a multiple of `align` (add_random_kstack_offset()
// in include/linux/randomize_kstack.h, and the eras below). The models are of the v6.11+
// geometry; the live sampler meets every era (kGeometries).
struct OffsetGeometry {
  // The bits of the state that reach the alloca: KSTACK_OFFSET_MAX's mask, narrowed to the arch's
  // input mask where the state only ever held masked inputs (the plain-XOR era).
  uint32_t mask = kOffsetMask;
  uint32_t align = kOffsetGranule;  // the alloca rounded up to this many bytes (a power of two)
  const char* name = "";            // every era and arch that gives these offsets, one line

  // The offset a state x gives.
  constexpr uint32_t Apply(uint32_t x) const { return ((x & mask) + align - 1) & ~(align - 1); }
  constexpr uint32_t max() const { return Apply(mask); }
  constexpr uint32_t count() const { return max() / align + 1; }  // distinct offsets
  constexpr bool Contains(uint32_t offset) const { return offset % align == 0 && offset <= max(); }
  // P(offset = bin * align) when the masked bits of the state are uniform: the share of the 1024
  // values x & 0x3FF that Apply maps there (1/64 each for v6.11+; 1/1024 for offset 0 and 7/1024
  // for 1024 on x86-64 in the ror32 era). Every bin below count() has a positive probability.
  constexpr double Probability(uint32_t bin) const {
    uint32_t hits = 0;
    for (uint32_t x = 0; x < 1024; ++x) hits += Apply(x) == bin * align ? 1 : 0;
    return hits / 1024.0;
  }
};

// The eras (KSTACK_OFFSET_MAX and choose_random_kstack_offset() in include/linux/randomize_kstack.h
// at each commit named below, the arch inputs as commit 6db1208bf95b's log lists them; the
// roundings are ours, from compiling the alloca with the kernel's flags: GCC 12 with
// -mpreferred-stack-boundary=3 rounds up to 8 on x86-64, clang 14 with -mstack-alignment=8 to 16;
// arm64 rounds to 16, as commit 872bb37f6829's log shows):
// - plain-XOR era, mainline v5.13-v6.8 and stable kernels before the ror32 backport (5.15.155,
//   6.1.86, 6.6.27, and the 6.8.y stable series, queued for it 2024-04-11): state ^= input at each
//   exit, the input pre-masked by the arch (x86 rdtsc() & 0xFF, arm64 get_random_int() /
//   get_random_u16() & 0x1FF), so the state never has more bits than the input mask;
// - ror32 era, v6.9-v6.10 and those stable kernels since, 6.8.y included (commit 9c573cd31343):
// state =
//   ror32(state, 5) ^ input spreads the input over all 32 bits, so all 10 bits of
//   KSTACK_OFFSET_MAX(x) = x & 0x3FF count, whatever the input mask (dropped in v6.10);
// - v6.11+ (commit 872bb37f6829): x & 0x3F0 on 64-bit, already 16-byte aligned.

// 64-bit kernels since v6.11 (commit 872bb37f6829): x & 0x3F0, already 16-byte aligned.
inline constexpr OffsetGeometry kGeometryV611{
    kOffsetMask, kOffsetGranule, "v6.11+ 64-bit: x & 0x3F0, 64 offsets {0, 16, ..., 1008}"};
// ror32 era on x86-64 built with GCC: x & 0x3FF rounded up to 8: 129 offsets, offset 0 and 1024
// rarer than the rest.
inline constexpr OffsetGeometry kGeometryPreV611X86{
    0x3FF, 8,
    "ror32 era x86-64 (v6.9-v6.10; stable 5.15.155+, 6.1.86+, 6.6.27+, 6.8.y): x & 0x3FF "
    "rounded up to 8 bytes, 129 offsets {0, 8, ..., 1024}"};
// ror32 era rounded up to 16: arm64, and x86-64 built with clang — the same offsets, which no
// sample can tell apart.
inline constexpr OffsetGeometry kGeometryPreV611Align16{
    0x3FF, 16,
    "ror32 era arm64, or x86-64 built with clang (v6.9-v6.10; stable 5.15.155+, 6.1.86+, "
    "6.6.27+, 6.8.y): x & 0x3FF rounded up to 16 bytes, 65 offsets {0, 16, ..., 1024}"};
// Plain-XOR era on x86-64 built with GCC: the XOR of rdtsc() & 0xFF values, rounded up to 8.
inline constexpr OffsetGeometry kGeometryPreV69X86{
    0xFF, 8,
    "plain-XOR era x86-64 (v5.13-v6.8; stable before 5.15.155, 6.1.86, 6.6.27 and the 6.8.y "
    "ror32 backport): rdtsc() & 0xFF rounded up to 8 bytes, 33 offsets {0, 8, ..., 256}"};
// Plain-XOR era on x86-64 built with clang: the same state rounded up to 16.
inline constexpr OffsetGeometry kGeometryPreV69X86Clang{
    0xFF, 16,
    "plain-XOR era x86-64 built with clang (v5.13-v6.8; stable before 5.15.155, 6.1.86, "
    "6.6.27 and the 6.8.y ror32 backport): rdtsc() & 0xFF rounded up to 16 bytes, 17 offsets {0, "
    "16, ..., 256}"};
// Plain-XOR era on arm64: the XOR of random & 0x1FF values, rounded up to 16.
inline constexpr OffsetGeometry kGeometryPreV69Arm64{
    0x1FF, 16,
    "plain-XOR era arm64 (v5.13-v6.8; stable before 5.15.155, 6.1.86, 6.6.27 and the 6.8.y "
    "ror32 backport): random & 0x1FF rounded up to 16 bytes, 33 offsets {0, 16, ..., 512}"};

// Every geometry an x86-64 or arm64 kernel gives, one row per distinct set of offsets (a
// row names every era and arch that gives it), the current kernels' first.
inline constexpr OffsetGeometry kGeometries[] = {kGeometryV611,           kGeometryPreV611X86,
                                                 kGeometryPreV611Align16, kGeometryPreV69X86,
                                                 kGeometryPreV69X86Clang, kGeometryPreV69Arm64};
inline constexpr uint32_t kMaxOffsetCount = 129;  // the most offsets of any geometry above

static_assert(kGeometryV611.count() == kOffsetCount && kGeometryV611.max() == kOffsetMask);
static_assert(kGeometryPreV611X86.count() == kMaxOffsetCount);
static_assert(kGeometryPreV69X86.count() == 33 && kGeometryPreV69X86Clang.count() == 17 &&
              kGeometryPreV69Arm64.count() == 33);

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
