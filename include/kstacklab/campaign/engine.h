// An engine boots a profile once and brings back what the guest reported: the campaign runner
// (runner.h) decides whether the boot counts. The embedded engine is QEMU (a local VM, KVM where
// the host can boot a guest with it, else TCG); docs/campaign.md "Engines".
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
  std::function<void(const std::string&)> machine_note{};
  // A line for the user while the boot goes on (a machine waited for, a log cut to its cap);
  // may be empty.
  std::function<void(const std::string&)> note{};
  // Called when the engine has decided its accelerator during the boot (the KVM probe fell back
  // to TCG): the runner saves it into the state at once, so a resume does not probe again.
  std::function<void()> accel_note{};
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

// What a campaign keeps of a boot's logs (docs/campaign.md "Caps"). A log over its cap keeps its
// first and last half-cap bytes with a line between them saying how much was cut.
inline constexpr size_t kMaxGuestLogBytes = size_t{1} << 20;  // run.log, entropy.log, sysctl.log
inline constexpr size_t kMaxConsoleBytes = size_t{16} << 20;  // a boot's console log file
// The guest's other files (result.json, env.json, ...) are kept whole up to this, else dropped.
inline constexpr size_t kMaxGuestFileBytes = size_t{64} << 20;

// `total` bytes of a log, of which the first and the last `keep` / 2 are kept, with a line
// between them that says what was cut.
class HeadTail {
 public:
  explicit HeadTail(size_t keep) : half_(keep / 2) {}
  void Append(std::string_view bytes);
  bool cut() const { return total_ > 2 * half_; }
  uint64_t total() const { return total_; }
  std::string Text() const;  // the whole text when not cut

 private:
  size_t half_;
  uint64_t total_ = 0;
  std::string head_;
  std::string tail_;  // the last bytes after the head (trimmed to half_ now and then)
};
// The line HeadTail puts where it cut.
std::string CutMarker(uint64_t cut, uint64_t total, size_t cap);

// Parses the data channel (the guest's second serial port): "kstacklab-file NAME" lines, base64
// bodies, "kstacklab-end", and "kstacklab-done" at the end; CRs ignored. Files before a missing
// "kstacklab-done" are kept (the caller decides). Names outside `known` are dropped. The logs
// (run.log, entropy.log, sysctl.log) are kept to kMaxGuestLogBytes (head and tail), other files
// whole up to kMaxGuestFileBytes or not at all; `cut` says, one line per file, what was cut.
struct ChannelData {
  std::map<std::string, std::string> files;
  bool done = false;
  std::vector<std::string> cut;
};

// The channel read in pieces of any size (memory: the caps above, whatever the text's length).
class ChannelReader {
 public:
  explicit ChannelReader(std::vector<std::string> known) : known_(std::move(known)) {}
  void Feed(std::string_view text);
  ChannelData Finish();  // the data so far (an unterminated last line is read as a line)

 private:
  void EndLine();
  void BeginFile(const std::string& name);
  void EndFile();
  void Body(std::string_view text);

  std::vector<std::string> known_;
  ChannelData data_;
  std::string line_;        // the current line, up to a marker's length
  bool long_line_ = false;  // the current line outgrew line_ (a body line: fed already)
  bool in_file_ = false;
  bool keep_ = false;  // the current file is known
  std::string name_;
  // base64 state of the current file
  uint32_t acc_ = 0;
  int bits_ = 0;
  int pad_ = 0;
  uint64_t symbols_ = 0;
  bool bad_ = false;
  std::string chunk_;  // decoded bytes not yet stored
  std::unique_ptr<HeadTail> log_;
  std::string whole_;
  bool over_ = false;
};
ChannelData ParseChannel(const std::string& text, const std::vector<std::string>& known);
// The channel in the file at `path`, read in 64 KiB pieces. RuntimeError when it cannot be read.
Expected<ChannelData> ParseChannelFile(const std::string& path,
                                       const std::vector<std::string>& known);

// Cuts the file at `path` to its first and last (`cap` - 1 KiB) / 2 bytes with CutMarker between
// them when it is longer than `cap` (written atomically; memory: `cap`; the result is within
// `cap`, so a second call leaves it). Returns the line that says so for
// the user, "" when the file was within its cap (or cannot be read).
std::string CapFile(const std::string& path, size_t cap);

// Standard base64 (RFC 4648 section 4), whitespace ignored; nullopt on any other character or a
// bad length.
std::optional<std::string> Base64Decode(std::string_view text);

// The shared libraries `binary` needs (ldd's "=> /path" and the loader), absolute paths.
Expected<std::vector<std::string>> SharedLibraries(const std::string& binary);

// True when `path` is an ELF executable without a program interpreter (statically linked).
bool IsStaticElf(const std::string& path);

}  // namespace kstacklab::campaign
