// Raw system calls: the instruction itself, no libc wrapper (no caching, no errno handling), so
// the timed region holds only the kernel entry/exit path under study. Returns the kernel's raw
// result (negative errno on failure).
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

namespace kstacklab {

#if defined(__x86_64__)
inline long RawSyscall3(long nr, long a0, long a1, long a2) {
  long ret;
  asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a0), "S"(a1), "d"(a2) : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
inline long RawSyscall3(long nr, long a0, long a1, long a2) {
  register long x8 asm("x8") = nr;
  register long x0 asm("x0") = a0;
  register long x1 asm("x1") = a1;
  register long x2 asm("x2") = a2;
  asm volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
  return x0;
}
#else
inline long RawSyscall3(long nr, long a0, long a1, long a2) {
  long r = syscall(nr, a0, a1, a2);
  return r == -1 ? -errno : r;
}
#endif

inline long RawSyscall0(long nr) { return RawSyscall3(nr, 0, 0, 0); }

// Five arguments (the 4th and 5th go in r10/r8 on x86-64, x3/x4 on arm64).
#if defined(__x86_64__)
inline long RawSyscall5(long nr, long a0, long a1, long a2, long a3, long a4) {
  long ret;
  register long r10 asm("r10") = a3;
  register long r8 asm("r8") = a4;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(nr), "D"(a0), "S"(a1), "d"(a2), "r"(r10), "r"(r8)
               : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
inline long RawSyscall5(long nr, long a0, long a1, long a2, long a3, long a4) {
  register long x8 asm("x8") = nr;
  register long x0 asm("x0") = a0;
  register long x1 asm("x1") = a1;
  register long x2 asm("x2") = a2;
  register long x3 asm("x3") = a3;
  register long x4 asm("x4") = a4;
  asm volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
  return x0;
}
#else
inline long RawSyscall5(long nr, long a0, long a1, long a2, long a3, long a4) {
  long r = syscall(nr, a0, a1, a2, a3, a4);
  return r == -1 ? -errno : r;
}
#endif

inline long RawSyscall4(long nr, long a0, long a1, long a2, long a3) {
  return RawSyscall5(nr, a0, a1, a2, a3, 0);
}

}  // namespace kstacklab
