// An engine boots a profile once and brings back what the guest reported: the campaign runner
// (runner.h) decides whether the boot counts. The embedded engine is QEMU (a local VM, KVM where
// the host can boot a guest with it, else TCG); docs/campaign.md "Engines".
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kstacklab/campaign/plan.h"
#include "kstacklab/error.h"

namespace kstacklab::campaign {

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
  std::function<void(const std::string&)> machine_note;
};

// What came back from one boot.
struct GuestReport {
  bool completed = false;    // the guest sent its files and powered off before the deadline
  bool interrupted = false;  // the stop flag was raised: the guest was killed
  std::string failure;       // why not completed ("" when completed): deadline, QEMU error, ...
  std::string accel;         // accelerator of this boot
  double seconds = 0;        // QEMU start to exit; ssh: the switch to the end of the run
  std::string machine;       // where a real machine was left ("" for a VM the engine ends)
  // The machine does not answer (after the plan's recover command): no later boot can work, so
  // the runner stops the campaign (status "stopped") for --resume once it is back.
  bool machine_lost = false;
  // The guest's files by name: uname, cmdline, env.json, result.json, run.rc, run.log,
  // entropy.json, entropy.rc, sysctl.log.
  std::map<std::string, std::string> files;
};

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
  // The accelerator decided so far and why ("" before the first boot).
  virtual std::string Accel() const = 0;
  virtual std::string AccelReason() const = 0;
  // A resumed campaign keeps the accelerator it had found.
  virtual void SetAccel(const std::string& accel, const std::string& reason) = 0;
};

// The QEMU engine. `work_dir` holds its scratch files (the initramfs, the data channel);
// `guest_binary` is the kstacklab executable copied into the guest (this one: /proc/self/exe).
std::unique_ptr<Engine> MakeQemuEngine(const CampaignPlan& plan, const std::string& work_dir,
                                       const std::string& guest_binary);

// The ssh engine (docs/campaign.md "Engine ssh"): `guest_binary` is copied to the machine.
std::unique_ptr<Engine> MakeSshEngine(const CampaignPlan& plan, const std::string& work_dir,
                                      const std::string& guest_binary);

// The lava engine (docs/campaign.md "Engine lava"): jobs submitted and followed with lavacli.
std::unique_ptr<Engine> MakeLavaEngine(const CampaignPlan& plan, const std::string& work_dir);

// The engine the plan names (plan.engine).
std::unique_ptr<Engine> MakeEngine(const CampaignPlan& plan, const std::string& work_dir,
                                   const std::string& guest_binary);

// ---- pieces of the QEMU engine, public for their tests
// -------------------------------------------

// One file of an initramfs (cpio "newc", the format the kernel unpacks).
struct CpioEntry {
  std::string path;   // without a leading '/': "bin/busybox"
  uint32_t mode = 0;  // type and permission bits (S_IFREG | 0755, S_IFDIR | 0755, S_IFLNK | 0777)
  std::string data;   // contents (the target for a link)
};
// The archive of `entries` with the "TRAILER!!!" record, each header and body padded to 4 bytes.
std::string CpioNewc(const std::vector<CpioEntry>& entries);

// The guest's /init (busybox sh). It reads its job from files, never from text it evaluates, so a
// profile's values cannot run as commands.
std::string GuestInitScript();

// Parses the data channel (the guest's second serial port): "kstacklab-file NAME" lines, base64
// bodies, "kstacklab-end", and "kstacklab-done" at the end; CRs ignored. Files before a missing
// "kstacklab-done" are kept (the caller decides). Names outside `known` are dropped.
struct ChannelData {
  std::map<std::string, std::string> files;
  bool done = false;
};
ChannelData ParseChannel(const std::string& text, const std::vector<std::string>& known);

// Standard base64 (RFC 4648 section 4), whitespace ignored; nullopt on any other character or a
// bad length.
std::optional<std::string> Base64Decode(std::string_view text);

// The shared libraries `binary` needs (ldd's "=> /path" and the loader), absolute paths.
Expected<std::vector<std::string>> SharedLibraries(const std::string& binary);

// True when `path` is an ELF executable without a program interpreter (statically linked).
bool IsStaticElf(const std::string& path);

}  // namespace kstacklab::campaign
