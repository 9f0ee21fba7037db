// Runtime knobs for the interleaved A/B run (docs/ab.md; the run itself:
// include/kstacklab/run/run.h).
//
// A knob is a setting of the running system that can be switched between repetitions of one
// run, so that its values are measured in one process, interleaved, with the machine's drift
// shared by every value (DESIGN.md "Variants are configurations"). Two kinds:
//  * `sysctl:NAME` (a file under /proc/sys) changes the machine and applies to every row;
//  * `model:policy` (the kstack offset design of the model/kstack rows) and `model:strategy` (the
//    poison strategy of the erase/poison and erase/syscall rows) change nothing on the machine: a
//    value selects the rows of the selected benchmarks that carry it, so the chosen designs are
//    measured in the ABBA order of a sysctl rather than all in one run's order.
//
// Anything a sysctl knob changes is restored: on return and on error (ScopedKnob, RAII), from the
// run's signal guard (run::RunGuard writes the saved value back on a signal), and — because
// SIGKILL cannot be caught — from a recovery file written before the first change, which the
// next run (or `kstacklab recover`) applies.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/workloads/workload.h"

namespace kstacklab::knobs {

// $KSTACKLAB_SYSCTL_ROOT=DIR: DIR stands in for /proc/sys (tests use a directory of files).
inline constexpr const char* kSysctlRootEnvVar = "KSTACKLAB_SYSCTL_ROOT";
// $KSTACKLAB_RECOVERY_FILE=PATH overrides where the saved original values are kept.
inline constexpr const char* kRecoveryFileEnvVar = "KSTACKLAB_RECOVERY_FILE";
// Moves the directory of the machine-wide per-sysctl locks (default /run/kstacklab; tests).
inline constexpr const char* kLockDirEnvVar = "KSTACKLAB_LOCK_DIR";

// "sysctl:kernel.stack_erasing=0,1" -> kind "sysctl", name "kernel.stack_erasing", values;
// "model:policy=off,percpu-prng" -> kind "model", name "policy" (or "strategy"), values.
struct AbSpec {
  std::string text;  // as given
  std::string kind;
  std::string name;
  std::vector<std::string> values;  // at least two, distinct, in the given order
};
// Errors (UsageError) quote `text` and say what form is expected.
Expected<AbSpec> ParseAbSpec(std::string_view text);

// /proc/sys, or $KSTACKLAB_SYSCTL_ROOT.
std::string SysctlRoot();
// The recovery file: $KSTACKLAB_RECOVERY_FILE, else $XDG_STATE_HOME/kstacklab/knob-recovery,
// else $HOME/.local/state/kstacklab/knob-recovery.
std::string RecoveryFilePath();

// A knob: its current value, a way to set it, and the rows each value is measured on. Values are
// compared as trimmed text.
class Knob {
 public:
  virtual ~Knob() = default;
  virtual std::string name() const = 0;  // e.g. "kernel.stack_erasing", "policy"
  virtual std::string path() const = 0;  // the file written ("" for a model knob)
  virtual Expected<std::string> Read() const = 0;
  virtual Status Write(const std::string& value) = 0;
  // True when Write changes the machine: the A/B run then holds the knob in a ScopedKnob
  // (recovery file, restore) under its signal guard. A model knob's value lives in this object
  // only.
  virtual bool changes_machine() const { return true; }
  // Whether any value of the knob bears on row `w` (sysctl: every row). The run warns about the
  // selected rows a knob does not take; they are not measured.
  virtual bool Takes(const workloads::WorkloadDef& /*w*/) const { return true; }
  // The rows measured under values[v], with the variant and baseline they are written with.
  // Sysctl: every row, its variant suffixed "NAME=VALUE", the first value the baseline. Model:
  // the rows it Takes whose variant is the value, as they are, the baseline being the first
  // value the workload table flags (off, generic), else the first value. No row for a value ->
  // UsageError naming the suite (and the --bench glob) that selects them.
  virtual Expected<std::vector<workloads::WorkloadDef>> RowsFor(
      const std::vector<workloads::WorkloadDef>& rows, const std::vector<std::string>& values,
      size_t v) const;
};

// Opens the knob of a spec and checks, without changing anything, that it exists, is writable
// and that every value is acceptable. Absent kernel.stack_erasing -> UsageError naming the
// kernel config it needs; not writable -> UsageError saying to run as root. A model knob's
// value that no row of its suite carries -> UsageError listing the valid values.
Expected<std::unique_ptr<Knob>> OpenKnob(const AbSpec& spec);

// One line of the recovery file: write `value` to `path`, the file of sysctl `name`.
struct RecoveryEntry {
  std::string name, path, value;
};
// The recovery file's lines, `sysctl<TAB>NAME<TAB>PATH<TAB>VALUE` (empty lines skipped). Every
// line must restore a sysctl: a valid name, PATH exactly its file under SysctlRoot(), a value of
// at most 4096 bytes; the first line that does not -> UsageError "line N: why".
Expected<std::vector<RecoveryEntry>> ParseRecoveryFile(std::string_view text);

// Applies and removes the recovery file: every saved value is written back. Returns one line per
// restored knob ("kernel.stack_erasing restored to 1 (/proc/sys/kernel/stack_erasing)"); an
// absent file -> empty. A value that cannot be written -> RuntimeError, and the file is kept.
// A file a live run holds (RecoveryInUse) -> RuntimeError, nothing written.
Expected<std::vector<std::string>> RecoverPending();
// True when the recovery file exists and a live run holds its lock (a run with a knob changed
// right now, whose file it is): it must not be applied or removed.
bool RecoveryInUse();
// What to say about such a file: whose it is, and that its run restores the knob when it ends.
std::string RecoveryInUseMessage();

// Holds a knob changed: Begin() takes the sysctl's machine-wide lock and the recovery lock and
// saves the original value in the recovery file; the destructor (or Restore()) writes the
// original back and removes the file. Restoring on a signal is the run guard's
// (run::RunGuard::HoldKnob), which holds a ScopedKnob.
class ScopedKnob {
 public:
  explicit ScopedKnob(Knob& knob) : knob_(knob) {}
  ~ScopedKnob();
  ScopedKnob(const ScopedKnob&) = delete;
  ScopedKnob& operator=(const ScopedKnob&) = delete;
  Status Begin();
  Status Set(const std::string& value);
  Status Restore();
  const std::string& original() const { return original_; }

 private:
  Knob& knob_;
  std::string original_;
  bool active_ = false;
  int lock_fd_ = -1;         // the recovery lock (flock), held from Begin() to Restore()
  int sysctl_lock_fd_ = -1;  // the sysctl's machine-wide lock (LockDir()), held as long
};

}  // namespace kstacklab::knobs
