// The BPF probe (live ground truth from the running kernel): a BPF program on the raw tracepoint
// sys_exit runs on the syscall's own task stack, below the alloca of add_random_kstack_offset(),
// so the address of one of its locals moves exactly with that syscall's stack offset. The probe
// records one LiveRecord per syscall of this process; DeriveOffsets() turns the addresses into
// offsets; SerialDependence() measures how much one offset tells about the next
// (kstacklab/live/analysis.h). docs/live.md.
//
// Privileges: loading needs root, or CAP_BPF + CAP_PERFMON (the program stores a kernel stack
// address, a "pointer leak" the verifier allows only with CAP_PERFMON). Probe::Attach diagnoses
// what is missing. Never used by `run`: the probe adds cost to every syscall of the process.
#pragma once

#include <sys/syscall.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/live/records.h"

namespace kstacklab::live {

// ---- The probe (libbpf) ---------------------------------------------------------------------

// Whether this build contains the BPF probe (libbpf, clang and bpftool were found at build
// time). When false, Probe::Attach returns the reason.
bool ProbeBuilt();

// Where the probe attaches on this build's architecture (src/live/kstack_probe.bpf.c says why).
#if defined(__aarch64__)
inline constexpr const char* kProbeHook = "BPF kprobe on the syscall's handler __arm64_sys_NAME";
#else
inline constexpr const char* kProbeHook = "BPF raw tracepoint sys_exit";
#endif

struct ProbeOptions {
  int32_t syscall_nr = -1;  // only this syscall; -1: every syscall of the process
};

// Loads and attaches the program for this process (tgid = getpid()); detaches on destruction.
// Not thread-safe; Drain from one thread.
class Probe {
 public:
  // RuntimeError (exit 1) naming exactly what is missing: the build, root / CAP_BPF+CAP_PERFMON,
  // the bpf() syscall, BTF, the raw tracepoint, lockdown.
  static Expected<std::unique_ptr<Probe>> Attach(const ProbeOptions& options);
  ~Probe();
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;

  // Appends every record waiting in the ring buffer to *out.
  Status Drain(std::vector<LiveRecord>* out);
  // How many syscalls a collector may make between two Drain calls: well below the ring
  // buffer's ~299k records, so none is dropped.
  static constexpr uint64_t kDrainEvery = 16384;
  // Records the ring buffer had no room for since Attach.
  uint64_t Dropped() const;
  // Why the records carry no kstack_rnd_state although the kernel's BTF declares it (the
  // program that reads it was refused, e.g. a kernel without CONFIG_KALLSYMS_ALL, whose
  // per-CPU variables have no address for the verifier); empty when they carry it or BTF has no
  // such variable.
  const std::string& PrngStateUnreadable() const;

  struct Impl;

 private:
  explicit Probe(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Which kstack-offset state the running kernel's BTF declares (empty optional: BTF unreadable).
struct BtfDesignHints {
  bool task_field = false;      // task_struct has kstack_offset
  bool prng_state = false;      // a kstack_rnd_state variable exists
  bool percpu_counter = false;  // a kstack_offset variable exists
};
std::optional<BtfDesignHints> ReadBtfDesignHints();

// ---- Collection -------------------------------------------------------------------------------

struct CollectOptions {
  int32_t syscall_nr = SYS_getpid;  // 39 on x86-64, 172 on arm64; one of CollectableSyscalls()
  uint64_t samples = 100000;
  int cpu = -1;  // pin the calling thread there while collecting (restored after); -1: no pin
};

// Syscalls Collect can issue: argument-free or harmless ones.
struct CollectableSyscall {
  const char* name;
  int32_t nr;
};
std::span<const CollectableSyscall> CollectableSyscalls();

// Attaches the probe filtered to options.syscall_nr, issues it `samples` times from the calling
// thread, and returns the records in order (exactly `samples`, or RuntimeError when records were
// lost). prng_unreadable (optional) receives Probe::PrngStateUnreadable().
Expected<std::vector<LiveRecord>> Collect(const CollectOptions& options,
                                          std::string* prng_unreadable = nullptr);

}  // namespace kstacklab::live
