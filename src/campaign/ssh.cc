// The ssh engine: a real machine reached with the system OpenSSH client. Per boot it copies the
// profile's kernel, initrd and this kstacklab binary where the machine lacks them (files named by
// their SHA-256, so a copy is made once per content), switches kernels with kexec or a reboot
// into a boot entry, waits for SSH to answer from a new boot (/proc/sys/kernel/random/boot_id
// changed) under a deadline, runs the job script (remote.h) and reads its data channel from
// ssh's standard output. Every step, its command and its outcome go to the attempt's log.
#include "kstacklab/campaign/ssh.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/engine_events.h"
#include "kstacklab/campaign/engines.h"
#include "kstacklab/campaign/process.h"
#include "kstacklab/campaign/remote.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/results/json.h"

namespace kstacklab::campaign {
namespace {

namespace fs = std::filesystem;

constexpr double kProbeSleepS = 2;  // between SSH probes while a machine boots
// Before the first boot a machine must answer at once: probes, kProbeSleepS apart.
constexpr int kFirstContactTries = 3;
// While a machine is waited for, a line every this many seconds (or a third of boot_timeout).
constexpr double kWaitNoteS = 30;

std::string Head(const std::string& text, size_t max = 300) {
  return EscapeControl(Trim(text).substr(0, max));
}

// The last non-empty line of `text` (ssh's error is its last line), escaped.
std::string LastErrorLine(const std::string& text) {
  const std::string t = Trim(text);
  const size_t nl = t.rfind('\n');
  return Head(nl == std::string::npos ? t : t.substr(nl + 1));
}

// The local file's SHA-256 (coreutils sha256sum), hex.
Expected<std::string> Sha256(const std::string& path) {
  ProcessResult r;
  KSTACKLAB_ASSIGN_OR_RETURN(r, RunProcess({"sha256sum", "--", path}, 600));
  const std::string hex = r.out.substr(0, r.out.find(' '));
  if (r.exit_code != 0 || hex.size() != 64) {
    return RuntimeError(fmt::format("sha256sum '{}' failed: {}", EscapeControl(path), Head(r.err)));
  }
  return hex;
}

class SshEngine : public Engine {
 public:
  SshEngine(CampaignPlan plan, std::string work_dir, std::string binary)
      : plan_(std::move(plan)),
        s_(SettingsOf<SshSettings>(plan_)),
        work_(std::move(work_dir)),
        binary_(std::move(binary)) {}

  Status Check() override {
    if (!FindProgram("ssh"))
      return UsageError("ssh is not installed: apt-get install openssh-client");
    if (!FindProgram("sha256sum"))
      return UsageError("sha256sum is not installed: apt-get install coreutils");
    const SshSettings& s = s_;
    if (!s.recover.empty() && !FindProgram(s.recover[0])) {
      return UsageError(fmt::format("engine recover: '{}' is not a program here (PATH or a path)",
                                    EscapeControl(s.recover[0])));
    }
    for (const Profile& p : plan_.profiles) KSTACKLAB_RETURN_IF_ERROR(CheckKernelImageSize(p));
    // A machine that answers now is asked its architecture; one that does not (down, booting,
    // brought up by the recover command) is asked at its first contact in Boot.
    return SameArchitecture(MachineArchitecture(s.connect_timeout_s + 10));
  }

  Status Prepare() override {
    KSTACKLAB_ASSIGN_OR_RETURN(binary_sha_, Sha256(binary_));
    for (const Profile& p : plan_.profiles) {
      for (const std::string& f : {p.kernel, p.initrd}) {
        if (f.empty() || sha_.count(f) != 0) continue;
        KSTACKLAB_ASSIGN_OR_RETURN(sha_[f], Sha256(f));
      }
    }
    return OkStatus();
  }

  GuestReport Boot(const GuestJob& job, const std::atomic<bool>& stop) override;

  BootFacts Facts() const override {
    return {"none", fmt::format("a real machine over SSH ({})", s_.host), false};
  }

 private:
  // ssh's argument vector for one remote command line. BatchMode: never a password prompt;
  // ControlPath=none: no multiplexing master outlives the command.
  std::vector<std::string> SshArgv(const std::string& remote) const {
    const SshSettings& s = s_;
    std::vector<std::string> argv = {"ssh"};
    if (!s.ssh_config.empty()) argv.insert(argv.end(), {"-F", s.ssh_config});
    argv.insert(argv.end(),
                {"-T", "-o", "BatchMode=yes", "-o",
                 fmt::format("ConnectTimeout={}", static_cast<int>(s.connect_timeout_s)), "-o",
                 "ControlPath=none", "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4",
                 "-p", std::to_string(s.port), "-l", s.user, "--", s.host, remote});
    return argv;
  }

  std::vector<std::string> Privileged(std::vector<std::string> words) const {
    if (s_.sudo) words.insert(words.begin(), {"sudo", "-n", "--"});
    return words;
  }

  // One remote command, logged with its outcome.
  Expected<ProcessResult> Remote(const std::vector<std::string>& words, double timeout_s,
                                 const std::string& stdin_path = "") {
    const std::string command = ShellCommand(words);
    const double start = MonotonicSeconds();
    auto r = RunProcess(SshArgv(command), timeout_s, stdin_path, stop_);
    if (!r.ok()) {
      Log(fmt::format("$ {}\n  cannot run ssh: {}", Head(command, 2000), r.error().message));
      return r;
    }
    Log(fmt::format("$ {}{}\n  exit {}{} after {:.1f} s{}", Head(command, 2000),
                    stdin_path.empty() ? "" : " < " + stdin_path, r->exit_code,
                    r->timed_out     ? " (deadline passed: killed)"
                    : r->interrupted ? " (interrupted: killed)"
                                     : "",
                    MonotonicSeconds() - start,
                    r->err.empty() ? "" : "; stderr: " + Head(r->err, 1000)));
    return r;
  }

  void Log(const std::string& line) {
    std::ofstream(log_path_, std::ios::app) << UtcTimestamp() << " " << line << "\n";
  }

  double Short() const { return s_.connect_timeout_s + 60; }

  // The machine's boot id, "" when it does not answer within `timeout_s` (then *error, when
  // given, says what ssh said).
  std::string BootId(double timeout_s, std::string* error = nullptr) {
    auto r = Remote({"cat", "/proc/sys/kernel/random/boot_id"}, timeout_s);
    if (r.ok() && r->exit_code == 0 && !Trim(r->out).empty()) return Trim(r->out);
    if (error != nullptr) {
      *error = !r.ok()                ? r.error().message
               : r->timed_out         ? fmt::format("no answer within {:g} s", timeout_s)
               : Trim(r->err).empty() ? fmt::format("exit {}", r->exit_code)
                                      : LastErrorLine(r->err);
    }
    return "";
  }
  std::string BootId() { return BootId(Short()); }

  // The machine's `uname -m`, "" when it does not answer within `timeout_s`.
  std::string MachineArchitecture(double timeout_s) {
    auto r = Remote({"uname", "-m"}, timeout_s);
    if (!r.ok() || r->exit_code != 0) return "";
    arch_asked_ = true;
    return Trim(r->out);
  }
  // The profiles' images are of the machine's architecture (`machine` "" = unknown: OkStatus).
  Status SameArchitecture(const std::string& machine) const {
    const Profile& p = plan_.profiles.front();
    if (machine.empty() || machine == p.arch) return OkStatus();
    return UsageError(fmt::format(
        "the machine {} is {} (uname -m) but profile '{}' kernel '{}' is {}: give images (and a "
        "kstacklab) built for {}",
        s_.host, EscapeControl(Head(machine, 64)), p.name, EscapeControl(p.kernel), p.arch,
        EscapeControl(Head(machine, 64))));
  }
  bool Stopped() const { return stop_ != nullptr && stop_->load(); }
  void Note(const EngineNote& note) const {
    if (note_) note_(note);
  }

  Status Stage(const std::string& local, const std::string& remote);
  Status MakeRemoteDir();
  Status StageKernel(const Profile& p, std::string* kernel, std::string* initrd);
  Status StageBinary();
  std::string RemoteBinary() const {
    return fmt::format("{}/kstacklab-{}", s_.remote_dir, binary_sha_.substr(0, 16));
  }
  Status Switch(const Profile& p, bool reboot, const std::string& kernel,
                const std::string& initrd);
  bool WaitForNewBoot(const std::string& old_id, std::string* why, std::string* new_id = nullptr);
  bool FirstContact(std::string* id, std::string* why);
  GuestReport RunJob(const GuestJob& job, const std::atomic<bool>& stop);
  GuestReport Settle(GuestReport r, const std::string& profile);

  CampaignPlan plan_;
  const SshSettings& s_;  // plan_'s
  std::string work_;
  std::string binary_;
  std::string binary_sha_;
  std::map<std::string, std::string> sha_;  // local path -> SHA-256
  std::string log_path_;
  const std::atomic<bool>* stop_ = nullptr;      // the current boot's stop flag
  std::function<void(const EngineNote&)> note_;  // the current boot's note
  bool answered_ = false;                        // the machine answered once in this process
  bool arch_asked_ = false;                      // it said its `uname -m` (and was checked)
};

// Copies `local` to `remote` unless the machine has a file there with the same content.
Status SshEngine::Stage(const std::string& local, const std::string& remote) {
  const std::string& sha = local == binary_ ? binary_sha_ : sha_[local];
  auto have = Remote({"sh", "-c", "test -f \"$1\" && sha256sum \"$1\"", "stage", remote}, Short());
  if (have.ok() && have->exit_code == 0 && have->out.rfind(sha, 0) == 0) return OkStatus();
  const std::string tmp = remote + ".part";
  ProcessResult r;
  KSTACKLAB_ASSIGN_OR_RETURN(
      r, Remote({"sh", "-c", "cat > \"$1\" && chmod 0755 \"$1\" && mv -f \"$1\" \"$2\"", "stage",
                 tmp, remote},
                s_.run_timeout_s, local));
  if (r.exit_code != 0) {
    return RuntimeError(fmt::format("copying '{}' to the machine failed (exit {}): {}",
                                    EscapeControl(local), r.exit_code, Head(r.err)));
  }
  return OkStatus();
}

Status SshEngine::MakeRemoteDir() {
  ProcessResult r;
  KSTACKLAB_ASSIGN_OR_RETURN(r, Remote({"mkdir", "-p", "--", s_.remote_dir}, Short()));
  if (r.exit_code != 0) {
    return RuntimeError(
        fmt::format("cannot create {} on the machine: {}", s_.remote_dir, Head(r.err)));
  }
  return OkStatus();
}

// Before a kexec: the kernel and initrd it loads.
Status SshEngine::StageKernel(const Profile& p, std::string* kernel, std::string* initrd) {
  const std::string& dir = s_.remote_dir;
  KSTACKLAB_RETURN_IF_ERROR(MakeRemoteDir());
  *kernel = fmt::format("{}/kernel-{}", dir, sha_[p.kernel].substr(0, 16));
  KSTACKLAB_RETURN_IF_ERROR(Stage(p.kernel, *kernel));
  if (!p.initrd.empty()) {
    *initrd = fmt::format("{}/initrd-{}", dir, sha_[p.initrd].substr(0, 16));
    KSTACKLAB_RETURN_IF_ERROR(Stage(p.initrd, *initrd));
  }
  return OkStatus();
}

// After the switch: the binary, in the new boot (a remote_dir on tmpfs did not survive it).
Status SshEngine::StageBinary() {
  KSTACKLAB_RETURN_IF_ERROR(MakeRemoteDir());
  return Stage(binary_, RemoteBinary());
}

// Loads the profile's kernel (kexec) or names its boot entry (reboot), then starts the switch
// detached on the machine: the SSH session that starts it may die with the old kernel.
Status SshEngine::Switch(const Profile& p, bool reboot, const std::string& kernel,
                         const std::string& initrd) {
  std::vector<std::string> prepare;
  if (reboot) {
    for (const std::string& w : s_.reboot_command) {
      std::string word = w;
      for (size_t at = word.find("{entry}"); at != std::string::npos; at = word.find("{entry}")) {
        word.replace(at, 7, p.boot_entry);
      }
      prepare.push_back(std::move(word));
    }
  } else {
    const std::string& base = s_.cmdline;
    prepare = {"kexec", "-l", kernel};
    if (!initrd.empty()) prepare.push_back("--initrd=" + initrd);
    prepare.push_back("--append=" + (base.empty() || p.cmdline.empty() ? base + p.cmdline
                                                                       : base + " " + p.cmdline));
  }
  ProcessResult r;
  KSTACKLAB_ASSIGN_OR_RETURN(r, Remote(Privileged(prepare), Short()));
  if (r.exit_code != 0) {
    return RuntimeError(fmt::format("{} failed on the machine (exit {}): {}", prepare[0],
                                    r.exit_code, Head(r.err)));
  }
  // A fixed script: systemd's own kexec/reboot where systemd runs, else the tool's.
  const std::string go =
      reboot ? "sleep 1; if [ -d /run/systemd/system ]; then systemctl reboot; else reboot; fi"
             : "sleep 1; if [ -d /run/systemd/system ]; then systemctl kexec; else kexec -e; fi";
  auto started = Remote(Privileged({"sh", "-c", go + " </dev/null >/dev/null 2>&1 &"}), Short());
  if (started.ok() && started->exit_code != 0 && started->exit_code != 255) {
    return RuntimeError(fmt::format("starting the {} failed on the machine (exit {}): {}",
                                    reboot ? "reboot" : "kexec", started->exit_code,
                                    Head(started->err)));
  }
  return OkStatus();
}

// Probes until SSH answers with a boot id other than `old_id` (into *new_id), the deadline
// (boot_timeout; no probe outlives it), or the stop flag; then once more after the plan's
// recover command, when it has one. Says every kWaitNoteS (or a third of boot_timeout) that it
// is still waiting.
bool SshEngine::WaitForNewBoot(const std::string& old_id, std::string* why, std::string* new_id) {
  const SshSettings& s = s_;
  const double every = std::min(kWaitNoteS, s.boot_timeout_s / 3);
  for (int round = 0; round < (s.recover.empty() ? 1 : 2); ++round) {
    if (round == 1) {
      auto r = RunProcess(s.recover, 600, "", stop_);
      Log(fmt::format("recover: {} -> {}", ShellCommand(s.recover),
                      r.ok()
                          ? fmt::format("exit {}{}", r->exit_code, r->timed_out ? " (killed)" : "")
                          : r.error().message));
    }
    const double start = MonotonicSeconds();
    const double deadline = start + s.boot_timeout_s;
    double next_note = start + every;
    for (double now = start; now < deadline && !Stopped(); now = MonotonicSeconds()) {
      if (now >= next_note) {
        Note(MachineAwaited{s.host, s.port, now - start, s.boot_timeout_s, round == 1});
        next_note += every;
      }
      const std::string id = BootId(std::min(Short(), std::max(0.1, deadline - now)));
      if (!id.empty() && id != old_id) {
        if (new_id != nullptr) *new_id = id;
        return true;
      }
      const double pause = std::min(kProbeSleepS, deadline - MonotonicSeconds());
      for (double t = 0; t < pause && !Stopped(); t += 0.1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    if (Stopped()) return false;
    *why = fmt::format("the machine did not come back within boot_timeout ({:g} s){}",
                       s.boot_timeout_s, round == 1 ? " after the recover command" : "");
  }
  return false;
}

// The first contact of this process with the machine, without a recover command: a machine that
// refuses the connection or the login, or whose name does not resolve, is a mistake in the plan
// or on the machine, not a machine that is booting, so it fails after kFirstContactTries probes
// (within boot_timeout) with ssh's own error.
bool SshEngine::FirstContact(std::string* id, std::string* why) {
  const SshSettings& s = s_;
  const double deadline = MonotonicSeconds() + s.boot_timeout_s;
  std::string error;
  for (int i = 0; i < kFirstContactTries && !Stopped(); ++i) {
    const double left = deadline - MonotonicSeconds();
    if (left <= 0) break;
    *id = BootId(std::min(s.connect_timeout_s + 10, left), &error);
    if (!id->empty()) return true;
    const double pause = std::min(kProbeSleepS, deadline - MonotonicSeconds());
    for (double t = 0; i + 1 < kFirstContactTries && t < pause && !Stopped(); t += 0.1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  *why = fmt::format(
      "the machine {}:{} (user {}) does not answer over SSH before the first boot: {}; check "
      "the engine's host, port and user, that sshd runs there and takes your key, or give a "
      "recover command that brings the machine up",
      s.host, s.port, s.user, error.empty() ? "interrupted" : error);
  return false;
}

GuestReport SshEngine::Boot(const GuestJob& job, const std::atomic<bool>& stop) {
  GuestReport r;
  r.facts = Facts();
  log_path_ = job.console_path;
  stop_ = &stop;
  note_ = job.note;
  const Profile& p = *job.profile;
  const SshSettings& s = s_;
  const bool reboot =
      s.switch_mode == "reboot" || (s.switch_mode == "alternate" && job.boot_index % 2 == 0);
  const std::string how = reboot ? "reboot" : "kexec";
  Log(fmt::format("boot {} of profile '{}' on {} by {}", job.boot_index, p.name, s.host, how));
  const double start = MonotonicSeconds();
  std::string old_id;
  std::string why;
  // Still booting, or down: wait for it as after a switch (recover included), then go on.
  const bool first = !answered_ && s.recover.empty();
  if (first ? !FirstContact(&old_id, &why) : !WaitForNewBoot("", &why, &old_id)) {
    r.interrupted = stop.load();
    r.failure = r.interrupted ? "interrupted"
                : first       ? why
                        : fmt::format("the machine {} does not answer over SSH: {}", s.host, why);
    r.machine = fmt::format("unreachable before boot {} of profile '{}'", job.boot_index, p.name);
    r.machine_lost = !r.interrupted;
    Log(r.failure);
    return r;
  }
  answered_ = true;
  if (!arch_asked_) {
    if (Status same = SameArchitecture(MachineArchitecture(Short())); !same.ok()) {
      // Nothing was switched; no boot of this plan can work on this machine.
      r.failure = same.error().message;
      r.machine = fmt::format("in its own kernel: not switched to profile '{}'", p.name);
      r.machine_lost = true;
      Log(r.failure);
      return r;
    }
  }
  std::string kernel, initrd;
  if (Status st = reboot ? OkStatus() : StageKernel(p, &kernel, &initrd); !st.ok()) {
    r.failure = st.error().message;
    return Settle(std::move(r), p.name);
  }
  if (job.machine_note) {
    job.machine_note(fmt::format("switching to profile '{}' (boot {}, {}) at {}", p.name,
                                 job.boot_index, how, UtcTimestamp()));
  }
  if (Status st = Switch(p, reboot, kernel, initrd); !st.ok()) {
    r.failure = st.error().message;
    r.machine = fmt::format("in its previous kernel: the switch to profile '{}' failed", p.name);
    return Settle(std::move(r), p.name);
  }
  if (!WaitForNewBoot(old_id, &why)) {
    r.interrupted = stop.load();
    r.failure = r.interrupted ? "interrupted" : why;
    r.seconds = MonotonicSeconds() - start;
    r.machine = r.interrupted
                    ? fmt::format("switching to profile '{}' when interrupted", p.name)
                    : fmt::format("unreachable after the {} to profile '{}'", how, p.name);
    r.machine_lost = !r.interrupted;
    Log(r.failure);
    return r;
  }
  r.machine = fmt::format("running profile '{}' (boot {}, {}) since {}", p.name, job.boot_index,
                          how, UtcTimestamp());
  if (job.machine_note) job.machine_note(r.machine);
  if (Status st = StageBinary(); !st.ok()) {
    r.failure = st.error().message;
    return Settle(std::move(r), p.name);
  }
  GuestReport run = RunJob(job, stop);
  run.machine = r.machine;
  run.seconds = MonotonicSeconds() - start;
  return Settle(std::move(run), p.name);
}

// A boot that failed mid-way: when the machine no longer answers, it is lost, not the profile.
// A step cut short by the stop flag is an interrupted attempt, whatever it failed with.
GuestReport SshEngine::Settle(GuestReport r, const std::string& profile) {
  if (!r.completed && Stopped()) {
    r.interrupted = true;
    r.failure = "interrupted";
    return r;
  }
  if (r.completed || r.interrupted || !BootId().empty()) return r;
  r.machine_lost = true;
  r.machine = fmt::format("unreachable during a boot of profile '{}'", profile);
  r.failure = fmt::format("the machine stopped answering: {}", r.failure);
  Log(r.failure);
  return r;
}

// The job script on the machine, its standard output (the data channel) into the work directory.
GuestReport SshEngine::RunJob(const GuestJob& job, const std::atomic<bool>& stop) {
  GuestReport r;
  r.facts = Facts();
  const SshSettings& s = s_;
  const std::string bin = RemoteBinary();
  std::vector<std::string> words = {"sh", "-c", JobScript()};
  for (const std::string& a : JobScriptArgs(bin, s.remote_dir + "/out", *job.profile, job.run_args,
                                            job.strength, job.strength_samples)) {
    words.push_back(a);
  }
  const std::string channel = work_ + "/channel.txt";
  const std::string err = work_ + "/ssh-run.err";
  for (const std::string& f : {channel, err}) (void)WriteFileAtomic(f, "");
  Child child;
  if (Status st = child.Start(SshArgv(ShellCommand(Privileged(words))), channel, {}, err);
      !st.ok()) {
    r.failure = st.error().message;
    return r;
  }
  Log(fmt::format("$ (the job script) kstacklab run for profile '{}'", job.profile->name));
  const double deadline = MonotonicSeconds() + s.run_timeout_s;
  int code = -1;
  while (!child.Poll(&code)) {
    if (stop.load() || MonotonicSeconds() > deadline) {
      child.Kill();
      r.interrupted = stop.load();
      r.failure = r.interrupted ? "interrupted"
                                : fmt::format("the run did not end within run_timeout ({:g} s)",
                                              s.run_timeout_s);
      Log(r.failure);
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto parsed = ParseChannelFile(channel, ChannelFileNames());
  ChannelData data = parsed.ok() ? std::move(*parsed) : ChannelData{};
  for (const GuestFileCut& cut : data.cut) Note(cut);
  r.files = std::move(data.files);
  auto err_text = ReadWholeFile(err, size_t{1} << 20);
  Log(fmt::format(
      "  exit {}{}", code,
      err_text.ok() && !Trim(*err_text).empty() ? "; stderr: " + Head(*err_text, 2000) : ""));
  if (data.done) {
    r.completed = true;
  } else {
    r.failure = fmt::format(
        "the job script on the machine ended (exit {}) without sending its "
        "results: {}",
        code, err_text.ok() ? Head(*err_text) : "");
  }
  return r;
}

}  // namespace

std::unique_ptr<Engine> SshSettings::Make(const CampaignPlan& plan, const std::string& work_dir,
                                          const std::string& guest_binary) {
  return std::make_unique<SshEngine>(plan, work_dir, guest_binary);
}

// ---- its settings: the plan's `engine:` keys, their checks and campaign.json's "ssh" ----------

Status SshSettings::Read(const PlanSection& e) {
  if (!e.Has("host")) return e.Bad("engine ssh needs a host (a name ssh reaches, e.g. sut1)");
  KSTACKLAB_ASSIGN_OR_RETURN(host, e.Text("host", 255));
  if (e.Has("port")) KSTACKLAB_ASSIGN_OR_RETURN(port, e.Count("port", 1, 65535));
  if (e.Has("user")) KSTACKLAB_ASSIGN_OR_RETURN(user, e.Text("user", 64));
  if (e.Has("ssh_config")) KSTACKLAB_ASSIGN_OR_RETURN(ssh_config, e.Path("ssh_config"));
  if (e.Has("switch")) KSTACKLAB_ASSIGN_OR_RETURN(switch_mode, e.Text("switch", 16));
  if (e.Has("sudo")) KSTACKLAB_ASSIGN_OR_RETURN(sudo, e.Bool("sudo"));
  if (e.Has("cmdline"))
    KSTACKLAB_ASSIGN_OR_RETURN(cmdline, e.Text("cmdline", CampaignLimits::kMaxCmdlineBytes));
  if (e.Has("remote_dir")) KSTACKLAB_ASSIGN_OR_RETURN(remote_dir, e.Text("remote_dir", 256));
  if (e.Has("reboot_command")) {
    KSTACKLAB_ASSIGN_OR_RETURN(reboot_command,
                               e.Words("reboot_command", CampaignLimits::kMaxQemuArgs));
  }
  if (e.Has("recover"))
    KSTACKLAB_ASSIGN_OR_RETURN(recover, e.Words("recover", CampaignLimits::kMaxQemuArgs));
  if (e.Has("connect_timeout")) {
    KSTACKLAB_ASSIGN_OR_RETURN(connect_timeout_s, e.DurationS("connect_timeout", 1, 600, "10s"));
  }
  if (e.Has("boot_timeout"))
    KSTACKLAB_ASSIGN_OR_RETURN(boot_timeout_s, e.DurationS("boot_timeout", 10, 86400, "10min"));
  if (e.Has("run_timeout"))
    KSTACKLAB_ASSIGN_OR_RETURN(run_timeout_s, e.DurationS("run_timeout", 10, 7 * 86400, "2h"));
  return OkStatus();
}

Status SshSettings::CheckValues() const {
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine host", host, 255));
  KSTACKLAB_RETURN_IF_ERROR(CountValue("engine port", port, 1, 65535));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine user", user, 64));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine ssh_config", ssh_config));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine switch", switch_mode, 16));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine cmdline", cmdline, CampaignLimits::kMaxCmdlineBytes));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine remote_dir", remote_dir, 256));
  KSTACKLAB_RETURN_IF_ERROR(
      ListValue("engine reboot_command", reboot_command, CampaignLimits::kMaxQemuArgs));
  KSTACKLAB_RETURN_IF_ERROR(ListValue("engine recover", recover, CampaignLimits::kMaxQemuArgs));
  KSTACKLAB_RETURN_IF_ERROR(SecondsValue("engine connect_timeout", connect_timeout_s, 1, 600));
  KSTACKLAB_RETURN_IF_ERROR(SecondsValue("engine boot_timeout", boot_timeout_s, 10, 86400));
  return SecondsValue("engine run_timeout", run_timeout_s, 10, 7 * 86400);
}

namespace {

Status CheckSshWords(const SshSettings& s) {
  if (!OptionWord(s.host)) {
    return UsageError(fmt::format(
        "engine host '{}' is not a host name ssh takes (letters, digits, . - _ : and not "
        "starting with -)",
        EscapeControl(s.host)));
  }
  if (!OptionWord(s.user)) {
    return UsageError(
        fmt::format("engine user '{}' is not a user name (one word, not starting "
                    "with -)",
                    EscapeControl(s.user)));
  }
  if (s.switch_mode != "kexec" && s.switch_mode != "reboot" && s.switch_mode != "alternate") {
    return UsageError(fmt::format("engine switch '{}' is unknown; give kexec, reboot or alternate",
                                  EscapeControl(s.switch_mode)));
  }
  if (s.remote_dir.size() < 2 || s.remote_dir[0] != '/' || !PrintableAscii(s.remote_dir) ||
      s.remote_dir.find("..") != std::string::npos) {
    return UsageError(
        fmt::format("engine remote_dir '{}' must be an absolute path on the machine, without ..",
                    EscapeControl(s.remote_dir)));
  }
  if (!s.ssh_config.empty())
    KSTACKLAB_RETURN_IF_ERROR(CheckFile(s.ssh_config, "engine ssh_config"));
  if (!PrintableAscii(s.cmdline)) return UsageError("engine cmdline must be printable ASCII");
  return OkStatus();
}

}  // namespace

Status SshSettings::Check(const CampaignPlan& plan) const {
  KSTACKLAB_RETURN_IF_ERROR(CheckSshWords(*this));
  const bool reboots = switch_mode != "kexec";
  bool entry_used = false;
  for (const std::string& w : reboot_command) entry_used |= w.find("{entry}") != std::string::npos;
  if (reboots && reboot_command.empty()) {
    return UsageError("engine reboot_command is empty; give e.g. [grub-reboot, '{entry}']");
  }
  for (const Profile& p : plan.profiles) {
    if (reboots && entry_used && p.boot_entry.empty()) {
      return UsageError(fmt::format(
          "profile '{}' needs a boot_entry (engine switch {} boots it with {} ...): the name of "
          "its entry in the machine's boot menu",
          p.name, switch_mode, EscapeControl(reboot_command[0])));
    }
  }
  for (const auto& list : {reboot_command, recover}) {
    for (const std::string& w : list) {
      if (!PrintableAscii(w))
        return UsageError("engine reboot_command and recover must be printable ASCII");
    }
  }
  return OkStatus();
}

Status SshSettings::CheckProfile(Profile& p) const {
  if (!p.config.empty()) {
    return UsageError(
        fmt::format("profile '{}' config: engine ssh carries no configuration in; the machine's "
                    "own /boot/config-RELEASE (or /proc/config.gz) is read; leave config out",
                    p.name));
  }
  return OkStatus();
}

Json SshSettings::ToJson() const {
  return {{"host", host},
          {"port", port},
          {"user", user},
          {"ssh_config", ssh_config},
          {"switch", switch_mode},
          {"sudo", sudo},
          {"cmdline", cmdline},
          {"remote_dir", remote_dir},
          {"reboot_command", reboot_command},
          {"recover", recover},
          {"connect_timeout_s", connect_timeout_s},
          {"boot_timeout_s", boot_timeout_s},
          {"run_timeout_s", run_timeout_s}};
}

void SshSettings::FromJson(const Json& sj) {
  KnownJsonKeys(
      sj,
      {"host", "port", "user", "ssh_config", "switch", "sudo", "cmdline", "remote_dir",
       "reboot_command", "recover", "connect_timeout_s", "boot_timeout_s", "run_timeout_s"},
      "plan ssh");
  host = sj.at("host").get<std::string>();
  port = sj.at("port").get<uint64_t>();
  user = sj.at("user").get<std::string>();
  ssh_config = sj.at("ssh_config").get<std::string>();
  switch_mode = sj.at("switch").get<std::string>();
  sudo = sj.at("sudo").get<bool>();
  cmdline = sj.at("cmdline").get<std::string>();
  remote_dir = sj.at("remote_dir").get<std::string>();
  reboot_command = sj.at("reboot_command").get<std::vector<std::string>>();
  recover = sj.at("recover").get<std::vector<std::string>>();
  connect_timeout_s = sj.at("connect_timeout_s").get<double>();
  boot_timeout_s = sj.at("boot_timeout_s").get<double>();
  run_timeout_s = sj.at("run_timeout_s").get<double>();
}

}  // namespace kstacklab::campaign
