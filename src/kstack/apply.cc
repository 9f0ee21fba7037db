#include "kstacklab/kstack/apply.h"

#include <sys/syscall.h>

#include <cstdint>

#include "kstacklab/common/raw_syscall.h"

namespace kstacklab::kstack {

// noipa: the caller may not assume anything about this function's frame or effects, so the
// frame is real and lies below the caller's alloca. clang has no noipa: noinline and the asm
// barriers below keep the frame real there (the libFuzzer build is clang's).
#if defined(__clang__)
#define KSTACKLAB_OPAQUE_FN [[gnu::noinline]]
#else
#define KSTACKLAB_OPAQUE_FN [[gnu::noinline, gnu::noipa]]
#endif
KSTACKLAB_OPAQUE_FN uintptr_t ModelSyscallHandler() {
  volatile uint64_t local[2];
  local[0] = 0x6b737461636b6c61ull;  // the handler uses its stack
  local[1] = local[0];
  uintptr_t address = reinterpret_cast<uintptr_t>(&local[0]);
  asm volatile("" : "+r"(address));  // an address, not a dangling pointer
  return address;
}

KSTACKLAB_OPAQUE_FN uintptr_t ModelSyscallHandlerGetpid() {
  volatile uint64_t local[2];
  local[0] = static_cast<uint64_t>(RawSyscall0(SYS_getpid));  // the kernel's part of the call
  local[1] = local[0];
  uintptr_t address = reinterpret_cast<uintptr_t>(&local[0]);
  asm volatile("" : "+r"(address));
  return address;
}

}  // namespace kstacklab::kstack
