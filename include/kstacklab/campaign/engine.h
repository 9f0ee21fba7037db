// An engine boots a profile once and brings back what the guest reported: the campaign runner
// (runner.h) decides whether the boot counts. Each engine is a row of the engine table (engines.h);
// docs/campaign.md "Engines".
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/campaign/arch.h"
#include "kstacklab/campaign/channel.h"
#include "kstacklab/campaign/engine_events.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/common/error.h"

namespace kstacklab::campaign {

// How a boot's machine was run and why, in its engine's words: each engine fills it (qemu: "kvm"
// or "tcg" and why it chose; ssh: "none", the real machine it reached; lava: "lava", the lab's
// device type). The runner keeps `how` and `why` as campaign.json's `accel` and `accel_reason`
// (an attempt's `accel`) and, with `emulated`, in each result file's run.campaign
// (`accelerator`, `accelerator_reason`, `emulated`); nothing outside the engine looks into them.
struct BootFacts {
  std::string how;  // "" before the engine has decided (qemu before its first boot)
  std::string why;
  bool emulated =
      false;  // the machine's CPU is emulated: times are the emulator's, not the kernel's
};

// One boot to make.
struct GuestJob {
  const Profile* profile = nullptr;
  std::vector<std::string> run_args;  // `kstacklab run` arguments (the plan's)
  bool strength = false;              // also `entropy --kernel --format json`
  uint64_t strength_samples = 100000;
  std::string console_path;  // where the guest's console goes (kept); ssh: the steps' log
  uint64_t boot_index = 1;   // which boot of the profile (ssh alternates kexec and reboot by it)
  // Called before the engine changes what a real machine runs (ssh: before it switches kernels),
  // with where the machine will then be; the runner writes it into the state at once, so a
  // campaign killed mid-switch still says which kernel the machine was sent to.
  std::function<void(const std::string&)> machine_note{};
  // What the user is told while the boot goes on (a machine waited for, a log cut to its cap),
  // worded by report/campaign_progress.h; may be empty.
  std::function<void(const EngineNote&)> note{};
  // Called when the engine has decided how it runs its machine during the boot (Engine::Facts;
  // qemu: the KVM probe fell back to TCG): the runner saves it into the state at once, so a
  // resume does not decide again.
  std::function<void()> facts_note{};
};

// What came back from one boot.
struct GuestReport {
  bool completed = false;    // the guest sent its files and powered off before the deadline
  bool interrupted = false;  // the stop flag was raised: the guest was killed
  std::string failure;       // why not completed ("" when completed): deadline, QEMU error, ...
  BootFacts facts;           // how this boot's machine was run (the engine's Facts() after it)
  double seconds = 0;        // QEMU start to exit; ssh: the switch to the end of the run
  std::string machine;       // where a real machine was left ("" for a VM the engine ends)
  // The machine does not answer (after the plan's recover command): no later boot can work, so
  // the runner stops the campaign (status "stopped") for --resume once it is back.
  bool machine_lost = false;
  // A write on this host failed (the boot's files, its console log; IsHostWriteFault): not the
  // boot's fault. The runner stops the campaign for --resume and does not count the attempt.
  std::optional<Error> host_fault;
  // The guest's files by name: uname, cmdline, env.json, result.json, run.rc, run.log,
  // entropy.json, entropy.rc, sysctl.log.
  std::map<std::string, std::string> files;
};

// True when `e` is this host failing a write whatever the boot did: its errno (Error::os_errno)
// is ENOSPC, EDQUOT, EFBIG, EIO or EROFS. Such a failure stops a campaign; it never counts as a
// failed boot.
bool IsHostWriteFault(const Error& e);

class Engine {
 public:
  virtual ~Engine() = default;
  // Everything the engine needs on this host (tools installed, a static busybox), checked before
  // the first boot: UsageErrors naming the package to install.
  virtual Status Check() = 0;
  // Builds what every boot shares (the guest's initramfs). Runtime errors.
  virtual Status Prepare() = 0;
  // Boots the job's profile once. Never hangs: every wait has a deadline; `stop` (set by a signal
  // handler) kills the guest at once.
  virtual GuestReport Boot(const GuestJob& job, const std::atomic<bool>& stop) = 0;
  // How the engine runs its machine, as decided so far (`how` "" before the first boot).
  virtual BootFacts Facts() const = 0;
  // The emulator, machine and CPU model of a virtual machine, for every result file and the
  // report ("qemu-system-aarch64 -M virt -cpu max (TCG, emulated)"); "" for a real machine.
  virtual std::string MachineModel() const { return ""; }
  // A resumed campaign keeps what the engine had decided (the facts campaign.json recorded); an
  // engine that decides nothing ignores them.
  virtual void Restore(const BootFacts& facts) { (void)facts; }
};

// The engine the plan names: its row's factory (engines.h). `work_dir` holds the engine's scratch
// files; `guest_binary` is the kstacklab executable it runs in the guest or on the machine (this
// one: /proc/self/exe).
std::unique_ptr<Engine> MakeEngine(const CampaignPlan& plan, const std::string& work_dir,
                                   const std::string& guest_binary);

// ---- checks before boot 1 of the engines that boot a local image (qemu, ssh)
// ------------------------------------------------------------------------------------------

// The profile's kernel is as long as its x86 setup header says (Documentation/arch/x86/boot.rst:
// (setup_sects + 1) * 512 bytes of setup, setup_sects 0 meaning 4, then syssize 16-byte
// paragraphs of protected-mode code; syssize is 16 bits before protocol 2.04). An image cut
// short -> UsageError naming the profile, the file, both sizes and the fix. A file that is not a
// bzImage is CheckPlan's to refuse: OkStatus here.
Status CheckKernelImageSize(const Profile& profile);

// QEMU's `-m` value (digits, optionally M or G; MiB without a suffix) against the host's memory
// (`meminfo`: /proc/meminfo's text, MemTotal in kB). More than MemTotal -> UsageError naming the
// value, the host's memory and the fix. Text without MemTotal: OkStatus (nothing to compare).
Status CheckGuestMemory(const std::string& memory, const std::string& meminfo);

// `engine pin`'s CPUs against the CPUs this process may run on (`allowed`, from
// sched_getaffinity; QEMU inherits it): a CPU outside it -> UsageError naming it and the CPUs
// there are (every boot would otherwise fail as QEMU's affinity call is refused). An empty pin
// or an empty `allowed` (not known): OkStatus.
Status CheckPinnedCpus(const std::vector<uint64_t>& pin, const std::vector<uint64_t>& allowed);

// ---- pieces of the QEMU engine, public for their tests
// -------------------------------------------

// The guest's /init (busybox sh) on the QEMU machine of `arch` (its console and channel devices).
// It reads its job from files, never from text it evaluates, so a profile's values cannot run as
// commands.
std::string GuestInitScript(const Architecture& arch);

// The shared libraries the ELF executable `binary` needs, absolute paths on this host: its
// loader (PT_INTERP) and its DT_NEEDED libraries, recursively, from their DT_RUNPATH/DT_RPATH and
// the Debian directories of the binary's architecture (/lib/<multiarch>, /usr/lib/<multiarch>,
// then /lib64, /lib, /usr/lib). Read from the headers, never by running anything: the binary may
// be built for another architecture. RuntimeError naming a library found nowhere.
Expected<std::vector<std::string>> SharedLibraries(const std::string& binary);

// True when `path` is an ELF executable without a program interpreter (statically linked).
bool IsStaticElf(const std::string& path);

}  // namespace kstacklab::campaign
