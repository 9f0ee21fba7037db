// The QEMU engine: a generated initramfs (a static busybox, the guest's kstacklab binary and the
// libraries it needs, the /init below), the profile's kernel and command line, the console on
// the first serial port (kept as the boot's log) and the results on a second one (base64 files
// between markers), KVM when the host can boot a guest with it and TCG otherwise. The machine is
// the kernel's architecture's (arch.h): x86-64 on QEMU's pc, arm64 on virt.
#include "kstacklab/campaign/qemu.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "kstacklab/campaign/arch.h"
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

// The CPUs this process may run on, in order; empty when sched_getaffinity fails.
std::vector<uint64_t> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<uint64_t> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(static_cast<uint64_t>(c));
  }
  return cpus;
}

namespace fs = std::filesystem;

// The marker /init writes to the console first: the guest's userspace is alive.
constexpr const char* kInitMarker = "kstacklab-guest: init started";
// The kernel arguments the engine adds before the profile's (which may override them): the
// console on the first serial port, and a panic ends QEMU at once (-no-reboot).
std::string EngineCmdline(const Architecture& a) {
  return fmt::format("console={} panic=-1", a.qemu_console_tty);
}
// The KVM probe (accel auto, first boot): a standard kernel under working KVM reaches /init
// within seconds, so a KVM guest whose init has not spoken within kKvmProbeS, or whose console
// has printed and then stayed still for kKvmStallS (a PVM host hangs the kernel after "Probing
// EDD"), is taken as one KVM cannot boot. The probe's time is part of the boot's seconds (the
// time budget's clock).
constexpr double kKvmProbeS = 20;
constexpr double kKvmStallS = 8;

// Every parent directory of `entries`' paths that is not itself an entry, as directory entries
// first: the kernel's unpacker creates a file only inside a directory that exists.
std::vector<CpioEntry> WithParents(const std::vector<CpioEntry>& entries) {
  std::set<std::string> have;
  for (const CpioEntry& e : entries) {
    if (S_ISDIR(e.mode)) have.insert(e.path);
  }
  std::vector<CpioEntry> dirs;
  for (const CpioEntry& e : entries) {
    fs::path p = fs::path(e.path).parent_path();
    std::vector<std::string> chain;
    for (; !p.empty() && p != "/"; p = p.parent_path()) chain.push_back(p.string());
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      if (have.insert(*it).second) dirs.push_back({*it, S_IFDIR | 0755, ""});
    }
  }
  dirs.insert(dirs.end(), entries.begin(), entries.end());
  return dirs;
}

Expected<std::string> ReadBinary(const std::string& path) {
  return ReadRegularFile(path, size_t{512} << 20);
}

// The first `max` bytes of the file at `path` ("" when it cannot be read).
std::string ReadHead(const std::string& path, size_t max) {
  std::ifstream in(path, std::ios::binary);
  std::string text(max, '\0');
  in.read(text.data(), static_cast<std::streamsize>(max));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

// The console's line that says why a boot ended (a panic), for the boot's reason. The console
// was cut to kMaxConsoleBytes after the boot.
std::string PanicLine(const std::string& console_path) {
  auto text = ReadWholeFile(console_path, kMaxConsoleBytes + 4096);
  if (!text.ok()) return "";
  const size_t at = text->find("Kernel panic");
  if (at == std::string::npos) return "";
  const size_t end = text->find('\n', at);
  std::string line = text->substr(at, end == std::string::npos ? std::string::npos : end - at);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return EscapeControl(line.substr(0, 200));
}

// The marker is among the console's first lines (the kernel's boot messages come before it):
// only the part a console log keeps of its start is read.
bool ConsoleHasMarker(const std::string& console_path) {
  return ReadHead(console_path, kMaxConsoleBytes / 2).find(kInitMarker) != std::string::npos;
}

std::string FirstLine(const std::string& path) {
  auto text = ReadWholeFile(path, size_t{1} << 20);
  if (!text.ok()) return "";
  std::string t = Trim(*text);
  const size_t nl = t.find('\n');
  return EscapeControl(t.substr(0, std::min<size_t>(nl, 200)));
}

// The static busybox of an architecture: the host's /bin/busybox (Debian's busybox-static) for
// its own, else Debian's busybox-static of that architecture, unpacked once into the user's cache
// (${XDG_CACHE_HOME:-~/.cache}/kstacklab/busybox-ARCH/busybox).
std::string DefaultBusybox(const Architecture& a) {
  if (&a == &HostArchitecture()) return "/bin/busybox";
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string cache = xdg != nullptr && *xdg == '/'     ? std::string(xdg)
                            : home != nullptr && *home == '/' ? std::string(home) + "/.cache"
                                                              : std::string("/var/cache");
  return fmt::format("{}/kstacklab/busybox-{}/busybox", cache, a.debian_arch);
}

// Fetches Debian's busybox-static for `a` with apt-get download and unpacks its busybox to
// `path` (renamed into place: a concurrent campaign sees the whole file or none).
Status FetchBusybox(const Architecture& a, const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string work = (dir / ".fetch.XXXXXX").string();
  if (ec || ::mkdtemp(work.data()) == nullptr) {
    return RuntimeError(fmt::format("cannot create a directory in '{}' for busybox-static:{}: {}",
                                    EscapeControl(dir.string()), a.debian_arch,
                                    ec ? ec.message() : std::strerror(errno)));
  }
  ::chmod(work.c_str(), 0755);  // apt-get download writes as the _apt user when it can
  ProcessResult r;
  // $1 the directory, $2 the Debian architecture: passed as arguments, never in the script.
  const std::string script =
      "cd \"$1\" && apt-get download -qq \"busybox-static:$2\" && "
      "dpkg-deb -x busybox-static_*.deb root";
  auto ran = RunProcess({"sh", "-c", script, "sh", work, a.debian_arch}, 600);
  if (ran.ok()) r = std::move(*ran);
  const std::string unpacked = work + "/root/bin/busybox";
  if (ran.ok() && r.exit_code == 0 && IsStaticElf(unpacked)) fs::rename(unpacked, path, ec);
  fs::remove_all(work);
  if (!ran.ok() || r.exit_code != 0 || ec || !IsStaticElf(path)) {
    return RuntimeError(fmt::format(
        "could not fetch Debian's busybox-static:{} ({}): add the {} architecture to dpkg and "
        "run apt-get update (the all tier of scripts/install-deps.sh does both), or give engine "
        "busybox: PATH",
        a.debian_arch, !ran.ok() ? ran.error().message : EscapeControl(Trim(r.err).substr(0, 200)),
        a.debian_arch));
  }
  return OkStatus();
}

class QemuEngine : public Engine {
 public:
  QemuEngine(CampaignPlan plan, std::string work_dir, std::string guest_binary)
      : plan_(std::move(plan)),
        q_(SettingsOf<QemuSettings>(plan_)),
        arch_(QemuArchitecture(plan_)),
        work_(std::move(work_dir)),
        guest_binary_(std::move(guest_binary)),
        binary_(q_.binary.empty() ? arch_.qemu_system : q_.binary),
        busybox_(q_.busybox.empty() ? DefaultBusybox(arch_) : q_.busybox) {}

  Status Check() override {
    const QemuSettings& q = q_;
    if (!FindProgram(binary_)) {
      return UsageError(
          fmt::format("{} is not installed: apt-get install {} (or engine qemu: PATH)",
                      EscapeControl(binary_), arch_.qemu_package));
    }
    KSTACKLAB_RETURN_IF_ERROR(CheckBusybox());
    if (q.accel == "kvm" && !KvmUsable(nullptr)) {
      return UsageError("engine accel kvm: /dev/kvm cannot be opened here; give accel auto or tcg");
    }
    if (q.accel == "kvm" && &arch_ != &HostArchitecture()) {
      return UsageError(fmt::format(
          "engine accel kvm: the kernels are {} and this host is {}: KVM runs a guest of the "
          "host's architecture only; give accel auto or tcg",
          arch_.name, HostArchitecture().name));
    }
    for (const Profile& p : plan_.profiles) KSTACKLAB_RETURN_IF_ERROR(CheckKernelImageSize(p));
    if (auto meminfo = ReadWholeFile("/proc/meminfo", size_t{1} << 20); meminfo.ok()) {
      KSTACKLAB_RETURN_IF_ERROR(CheckGuestMemory(q.memory, *meminfo));
    }
    KSTACKLAB_RETURN_IF_ERROR(CheckPinnedCpus(q.pin, AllowedCpus()));
    // The guest's kstacklab and its libraries, read from their headers before boot 1.
    auto libs = SharedLibraries(guest_binary_);
    if (!libs.ok()) return UsageError(libs.error().message);
    libs_ = std::move(*libs);
    return OkStatus();
  }

  Status Prepare() override {
    std::vector<CpioEntry> e;
    for (const char* d : {"bin", "proc", "sys", "dev", "tmp", "k", "job", "boot", "etc"}) {
      e.push_back({d, S_IFDIR | 0755, ""});
    }
    if (q_.busybox.empty() && &arch_ != &HostArchitecture() && !IsStaticElf(busybox_)) {
      KSTACKLAB_RETURN_IF_ERROR(FetchBusybox(arch_, busybox_));
    }
    std::string busybox;
    KSTACKLAB_ASSIGN_OR_RETURN(busybox, ReadBinary(busybox_));
    e.push_back({"bin/busybox", S_IFREG | 0755, std::move(busybox)});
    std::string self;
    KSTACKLAB_ASSIGN_OR_RETURN(self, ReadBinary(guest_binary_));
    e.push_back({"k/kstacklab", S_IFREG | 0755, std::move(self)});
    if (libs_.empty()) KSTACKLAB_ASSIGN_OR_RETURN(libs_, SharedLibraries(guest_binary_));
    for (const std::string& lib : libs_) {
      std::string data;
      KSTACKLAB_ASSIGN_OR_RETURN(data, ReadBinary(lib));
      e.push_back({lib.substr(1), S_IFREG | 0755, std::move(data)});
    }
    e.push_back({"init", S_IFREG | 0755, GuestInitScript(arch_)});
    e.push_back({"k/job.sh", S_IFREG | 0644, JobScript()});
    base_ = CpioNewc(WithParents(e));
    return OkStatus();
  }

  GuestReport Boot(const GuestJob& job, const std::atomic<bool>& stop) override {
    if (accel_.empty()) {
      const QemuSettings& q = q_;
      std::string why;
      if (q.accel == "tcg") {
        SetAccel("tcg", "engine accel tcg");
      } else if (KvmUsable(&why)) {
        // Tried on this boot; a silent init falls back to TCG below, once.
        trying_kvm_ = true;
      } else {
        SetAccel("tcg", fmt::format("no usable /dev/kvm ({}): TCG", why));
      }
    }
    double probe_s = 0;
    if (trying_kvm_) {
      GuestReport r = BootOnce(job, stop, "kvm");
      if (r.failure != kSilentInit) {
        trying_kvm_ = false;
        if (!r.interrupted) SetAccel("kvm", "/dev/kvm booted the guest");
        r.facts.why = accel_reason_;
        return r;
      }
      trying_kvm_ = false;
      probe_s = r.seconds;
      SetAccel("tcg", fmt::format("KVM guest's init {} (a PVM host cannot boot a standard "
                                  "kernel): fell back to TCG after a {:.1f} s probe",
                                  kvm_stall_, probe_s));
      if (job.facts_note) job.facts_note();
      if (job.note) job.note(AcceleratorChanged{accel_, accel_reason_});
      std::error_code ec;
      fs::rename(job.console_path, job.console_path + ".kvm", ec);
    }
    GuestReport r = BootOnce(job, stop, accel_);
    r.seconds += probe_s;
    r.facts.why = accel_reason_;
    return r;
  }

  BootFacts Facts() const override {
    return {accel_, accel_reason_, QemuSettings::Emulated(accel_)};
  }
  std::string MachineModel() const override {
    const bool kvm = accel_ == "kvm";
    return fmt::format("{}{}{} -cpu {} ({})", binary_, *arch_.qemu_machine != '\0' ? " -M " : "",
                       arch_.qemu_machine, kvm ? "host" : "max", kvm ? "KVM" : "TCG, emulated");
  }
  void Restore(const BootFacts& facts) override { SetAccel(facts.how, facts.why); }

 private:
  void SetAccel(const std::string& accel, const std::string& reason) {
    accel_ = accel;
    accel_reason_ = reason;
  }

  static constexpr const char* kSilentInit = "the guest's init did not start";

  // KSTACKLAB_KVM_DEVICE names another device to probe: the tests use it to drive the KVM
  // fallback on hosts without /dev/kvm (docs/campaign.md).
  static bool KvmUsable(std::string* why) {
    const char* device = std::getenv("KSTACKLAB_KVM_DEVICE");
    const int fd =
        open(device != nullptr && *device != '\0' ? device : "/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      if (why != nullptr) *why = strerror(errno);
      return false;
    }
    close(fd);
    return true;
  }

  // The per-boot part of the initramfs: the job files the guest's /init reads.
  std::string JobArchive(const GuestJob& job) const {
    const Profile& p = *job.profile;
    std::vector<CpioEntry> e;
    e.push_back({"job/label", S_IFREG | 0644, p.name + "\n"});
    std::string args;
    for (const std::string& a : job.run_args) args += a + "\n";
    e.push_back({"job/run-args", S_IFREG | 0644, args});
    std::string sysctl;
    for (const auto& [name, value] : p.sysctls) sysctl += fmt::format("{}\n{}\n", name, value);
    e.push_back({"job/sysctl", S_IFREG | 0644, sysctl});
    if (job.strength) {
      e.push_back({"job/strength", S_IFREG | 0644, std::to_string(job.strength_samples) + "\n"});
    }
    if (!p.config.empty() && !p.release.empty()) {
      auto config = ReadWholeFile(p.config, size_t{64} << 20);
      if (config.ok()) {
        e.push_back({"boot/config-" + p.release, S_IFREG | 0644, std::move(*config)});
      }
    }
    return CpioNewc(e);
  }

  std::vector<std::string> QemuArgv(const Profile& p, const std::string& initrd,
                                    const std::string& channel, const std::string& console,
                                    const std::string& accel) const {
    const QemuSettings& q = q_;
    std::vector<std::string> argv = {binary_,    "-nodefaults", "-no-user-config",
                                     "-display", "none",        "-no-reboot"};
    if (*arch_.qemu_machine != '\0') argv.insert(argv.end(), {"-M", arch_.qemu_machine});
    if (accel == "kvm") {
      argv.insert(argv.end(), {"-accel", "kvm", "-cpu", "host"});
    } else {
      argv.insert(argv.end(), {"-accel", "tcg,thread=multi", "-cpu", "max"});
    }
    const std::string cmdline = EngineCmdline(arch_);
    argv.insert(argv.end(),
                {"-smp", std::to_string(q.cpus), "-m", q.memory, "-kernel", p.kernel, "-initrd",
                 initrd, "-append", p.cmdline.empty() ? cmdline : cmdline + " " + p.cmdline,
                 "-serial", "file:" + console});
    if (arch_.qemu_channel_on_pci) {
      argv.insert(argv.end(), {"-chardev", "file,id=kchannel,path=" + channel, "-device",
                               "pci-serial,chardev=kchannel"});
    } else {
      argv.insert(argv.end(), {"-serial", "file:" + channel});
    }
    argv.insert(argv.end(), q.extra_args.begin(), q.extra_args.end());
    return argv;
  }

  // Writes the boot's initramfs (the profile's own initrd, padded to 4 bytes, then the shared
  // one and the job's files) to `initrd`, and empties `channel` and the console log.
  Status WriteBootFiles(const GuestJob& job, const std::string& initrd,
                        const std::string& channel) const {
    const Profile& p = *job.profile;
    std::string image;
    if (!p.initrd.empty()) {
      auto extra = ReadBinary(p.initrd);
      if (!extra.ok()) return extra.error();
      image = std::move(*extra);
      image.resize((image.size() + 3) & ~size_t{3}, '\0');
    }
    image += base_;
    image += JobArchive(job);
    for (const std::string& path : {initrd, channel, job.console_path}) {
      KSTACKLAB_RETURN_IF_ERROR(WriteFileAtomic(path, path == initrd ? image : std::string()));
    }
    return OkStatus();
  }

  // Waits for QEMU (started at `start`) to exit, into `code`; kills it when the campaign is
  // stopped, at the boot timeout, or when the guest's init is silent past the init timeout.
  // Returns false when it was killed (`r` then says why).
  bool AwaitExit(Child& child, const GuestJob& job, const std::atomic<bool>& stop,
                 const std::string& accel, double start, int* code, GuestReport* r) {
    bool init_seen = false;
    const bool probing = accel == "kvm" && trying_kvm_;
    uintmax_t console_size = 0;
    double console_grew = 0;  // when the console last grew (seconds since start)
    for (;;) {
      if (child.Poll(code)) return true;
      const double t = MonotonicSeconds() - start;
      if (stop.load()) {
        child.Kill();
        r->interrupted = true;
        r->failure = "interrupted";
        r->seconds = MonotonicSeconds() - start;
        return false;
      }
      if (t > q_.boot_timeout_s) {
        child.Kill();
        r->failure =
            fmt::format("no power-off within the boot timeout ({:g} s): killed", q_.boot_timeout_s);
        r->seconds = MonotonicSeconds() - start;
        return false;
      }
      if (probing && !init_seen &&
          ProbeStalled(job.console_path, t, &console_size, &console_grew, &init_seen)) {
        child.Kill();
        r->failure = kSilentInit;
        r->seconds = MonotonicSeconds() - start;
        return false;
      }
      if (!init_seen && t > q_.init_timeout_s) {
        init_seen = ConsoleHasMarker(job.console_path);
        if (!init_seen) {
          child.Kill();
          r->failure = kSilentInit;
          if (accel != "kvm") {
            r->failure = fmt::format("{} within init_timeout ({:g} s): killed", kSilentInit,
                                     q_.init_timeout_s);
          }
          r->seconds = MonotonicSeconds() - start;
          return false;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  // Whether the KVM probe's guest, `t` seconds after QEMU started, is taken as stalled (sets
  // kvm_stall_ to how): silent past min(init_timeout, kKvmProbeS), or printed and then still for
  // kKvmStallS. Sets `init_seen` when the init marker has appeared.
  bool ProbeStalled(const std::string& console, double t, uintmax_t* size, double* grew,
                    bool* init_seen) {
    std::error_code ec;
    const uintmax_t now = fs::file_size(console, ec);
    if (!ec && now != *size) {
      *size = now;
      *grew = t;
      *init_seen = ConsoleHasMarker(console);
      if (*init_seen) return false;
    }
    const double limit = std::min(q_.init_timeout_s, kKvmProbeS);
    if (t > limit) {
      kvm_stall_ = fmt::format("silent for {:g} s", limit);
      return true;
    }
    if (*size > 0 && t - *grew > kKvmStallS) {
      kvm_stall_ =
          fmt::format("stalled: its console still for {:g} s after {} bytes", kKvmStallS, *size);
      return true;
    }
    return false;
  }

  // Reads what the guest sent on `channel` after QEMU exited with `code`: its files, and
  // whether it completed or why not.
  static void ReadGuestResults(const GuestJob& job, const std::string& channel,
                               const std::string& qemu_log, int code, GuestReport* r) {
    auto parsed = ParseChannelFile(channel, ChannelFileNames());
    ChannelData data = parsed.ok() ? std::move(*parsed) : ChannelData{};
    if (job.note) {
      for (const GuestFileCut& cut : data.cut) job.note(cut);
    }
    r->files = std::move(data.files);
    if (code != 0) {
      r->failure = fmt::format("QEMU exited with status {}: {}", code, FirstLine(qemu_log));
    } else if (!data.done) {
      const std::string panic = PanicLine(job.console_path);
      r->failure = panic.empty() ? std::string(
                                       "the guest stopped without sending its results "
                                       "(see its console log)")
                                 : panic;
    } else {
      r->completed = true;
    }
  }

  GuestReport BootOnce(const GuestJob& job, const std::atomic<bool>& stop,
                       const std::string& accel) {
    GuestReport r;
    r.facts.how = accel;
    r.facts.emulated = QemuSettings::Emulated(accel);
    const Profile& p = *job.profile;
    const std::string initrd = work_ + "/boot.initrd";
    const std::string channel = work_ + "/channel.txt";
    if (Status st = WriteBootFiles(job, initrd, channel); !st.ok()) {
      r.failure = st.error().message;
      if (IsHostWriteFault(st.error())) r.host_fault = st.error();
      return r;
    }
    const std::string qemu_log = work_ + "/qemu.log";
    std::error_code ec;
    fs::remove(qemu_log, ec);
    Child child;
    const double start = MonotonicSeconds();
    if (Status st =
            child.Start(QemuArgv(p, initrd, channel, job.console_path, accel), qemu_log, q_.pin);
        !st.ok()) {
      r.failure = st.error().message;
      return r;
    }
    int code = -1;
    const bool exited = AwaitExit(child, job, stop, accel, start, &code, &r);
    if (auto cut = CapFile(job.console_path, kMaxConsoleBytes); cut && job.note) {
      job.note(LogCut{LogKind::kConsole, std::move(*cut)});
    }
    if (!exited) return r;
    r.seconds = MonotonicSeconds() - start;
    ReadGuestResults(job, channel, qemu_log, code, &r);
    return r;
  }

  // The campaign's architecture (CheckPlan gave every profile its image's).
  static const Architecture& QemuArchitecture(const CampaignPlan& plan) {
    const Architecture* a =
        plan.profiles.empty() ? nullptr : FindArchitecture(plan.profiles.front().arch);
    return a != nullptr ? *a : HostArchitecture();
  }

  // The busybox is a static executable of the kernels' architecture. The default for another
  // architecture than the host's is fetched in Prepare when it is not in the cache yet.
  Status CheckBusybox() const {
    if (q_.busybox.empty() && &arch_ != &HostArchitecture()) {
      if (IsStaticElf(busybox_) || (FindProgram("apt-get") && FindProgram("dpkg-deb"))) {
        return OkStatus();
      }
      return UsageError(fmt::format(
          "no static busybox for {} at {}, and no apt-get to fetch Debian's busybox-static:{}: "
          "give engine busybox: PATH (a static busybox built for {})",
          arch_.name, EscapeControl(busybox_), arch_.debian_arch, arch_.name));
    }
    // Opened without blocking first: a FIFO in the busybox's place is refused, not waited on.
    if (auto busybox = ReadBinary(busybox_); !busybox.ok() && access(busybox_.c_str(), F_OK) == 0) {
      return UsageError("engine busybox: " + busybox.error().message);
    }
    if (!IsStaticElf(busybox_)) {
      return UsageError(fmt::format(
          "'{}' is not a static busybox: apt-get install busybox-static (or engine busybox: PATH)",
          EscapeControl(busybox_)));
    }
    auto read = ElfArchitecture(busybox_, "engine busybox");
    const Architecture* built = read.ok() ? *read : nullptr;
    if (built == nullptr) {
      return UsageError(fmt::format(
          "engine busybox '{}' is no executable of {} ({}): give a static busybox for {} "
          "(Debian's busybox-static:{})",
          EscapeControl(busybox_), arch_.name, read.error().message, arch_.name,
          arch_.debian_arch));
    }
    if (built != &arch_) {
      return UsageError(fmt::format(
          "engine busybox '{}' is built for {} but the kernels are {}: give a static busybox "
          "for {} (Debian's busybox-static:{})",
          EscapeControl(busybox_), built->name, arch_.name, arch_.name, arch_.debian_arch));
    }
    return OkStatus();
  }

  CampaignPlan plan_;
  const QemuSettings& q_;  // plan_'s
  const Architecture& arch_;
  std::string work_;
  std::string guest_binary_;
  std::string binary_;             // the emulator: the plan's, else the architecture's
  std::string busybox_;            // the plan's, else DefaultBusybox
  std::vector<std::string> libs_;  // the guest kstacklab's shared libraries (Check)
  std::string base_;               // the shared initramfs (cpio)
  std::string accel_;
  std::string accel_reason_;
  bool trying_kvm_ = false;
  std::string kvm_stall_;  // how the KVM probe saw the guest stall
};

}  // namespace

std::unique_ptr<Engine> QemuSettings::Make(const CampaignPlan& plan, const std::string& work_dir,
                                           const std::string& guest_binary) {
  return std::make_unique<QemuEngine>(plan, work_dir, guest_binary);
}

// ---- its settings: the plan's `engine:` keys, their checks and campaign.json's "engine" -------

namespace {

Status CheckQemuMemory(const std::string& m) {
  size_t digits = 0;
  while (digits < m.size() && m[digits] >= '0' && m[digits] <= '9') ++digits;
  const std::string suffix = m.substr(digits);
  if (digits == 0 || digits > 6 || !(suffix.empty() || suffix == "M" || suffix == "G")) {
    return UsageError(
        fmt::format("engine memory '{}' is not a size; give e.g. 2G or 2048M", EscapeControl(m)));
  }
  const uint64_t n = std::strtoull(m.substr(0, digits).c_str(), nullptr, 10);
  const uint64_t mib = suffix == "G" ? n * 1024 : n;  // QEMU's -m: MiB without a suffix
  if (mib < QemuSettings::kMinMemoryMiB) {
    return UsageError(fmt::format(
        "engine memory {} is below what a kernel and the guest's initramfs boot in; give at "
        "least {}M, e.g. 1G",
        EscapeControl(m), QemuSettings::kMinMemoryMiB));
  }
  return OkStatus();
}

}  // namespace

Status QemuSettings::Read(const PlanSection& e) {
  if (e.Has("cpus")) KSTACKLAB_ASSIGN_OR_RETURN(cpus, e.Count("cpus", 1, kMaxCpus));
  if (e.Has("memory")) KSTACKLAB_ASSIGN_OR_RETURN(memory, e.Text("memory", 16));
  if (e.Has("accel")) KSTACKLAB_ASSIGN_OR_RETURN(accel, e.Text("accel", 8));
  if (e.Has("pin")) {
    KSTACKLAB_ASSIGN_OR_RETURN(
        pin, e.Counts("pin", 64, 0, CPU_SETSIZE - 1,
                      "engine pin must be a list of host CPU numbers, e.g. [2, 3]"));
  }
  if (e.Has("qemu_args"))
    KSTACKLAB_ASSIGN_OR_RETURN(extra_args, e.Words("qemu_args", CampaignLimits::kMaxQemuArgs));
  if (e.Has("boot_timeout"))
    KSTACKLAB_ASSIGN_OR_RETURN(
        boot_timeout_s, e.DurationS("boot_timeout", kMinBootTimeoutS, kMaxBootTimeoutS, "30min"));
  if (e.Has("init_timeout"))
    KSTACKLAB_ASSIGN_OR_RETURN(
        init_timeout_s, e.DurationS("init_timeout", kMinInitTimeoutS, kMaxInitTimeoutS, "2min"));
  if (e.Has("qemu")) KSTACKLAB_ASSIGN_OR_RETURN(binary, e.Text("qemu"));
  if (e.Has("busybox")) KSTACKLAB_ASSIGN_OR_RETURN(busybox, e.Text("busybox"));
  return OkStatus();
}

bool QemuSettings::Emulated(std::string_view how) { return how == "tcg"; }

Status QemuSettings::CheckValues() const {
  if (!binary.empty()) KSTACKLAB_RETURN_IF_ERROR(ProgramValue("engine qemu", binary));
  if (!busybox.empty()) KSTACKLAB_RETURN_IF_ERROR(ProgramValue("engine busybox", busybox));
  KSTACKLAB_RETURN_IF_ERROR(CountValue("engine cpus", cpus, 1, kMaxCpus));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine memory", memory, 16));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine accel", accel, 8));
  if (pin.size() > 64) return UsageError("engine pin has more than 64 CPUs");
  for (uint64_t cpu : pin)
    KSTACKLAB_RETURN_IF_ERROR(CountValue("engine pin", cpu, 0, CPU_SETSIZE - 1));
  KSTACKLAB_RETURN_IF_ERROR(
      ListValue("engine qemu_args", extra_args, CampaignLimits::kMaxQemuArgs));
  for (const std::string& a : extra_args) {
    if (!PrintableAscii(a)) return UsageError("engine qemu_args must be printable ASCII");
  }
  KSTACKLAB_RETURN_IF_ERROR(
      SecondsValue("engine boot_timeout", boot_timeout_s, kMinBootTimeoutS, kMaxBootTimeoutS));
  return SecondsValue("engine init_timeout", init_timeout_s, kMinInitTimeoutS, kMaxInitTimeoutS);
}

Status QemuSettings::Check(const CampaignPlan& plan) const {
  (void)plan;  // CheckPlan has given every profile one architecture, which QEMU boots
  if (accel != "auto" && accel != "kvm" && accel != "tcg") {
    return UsageError(
        fmt::format("engine accel '{}' is unknown; give auto, kvm or tcg", EscapeControl(accel)));
  }
  KSTACKLAB_RETURN_IF_ERROR(CheckQemuMemory(memory));
  for (const std::string& a : extra_args) {
    if (!PrintableAscii(a)) return UsageError("engine qemu_args must be printable ASCII");
  }
  if (init_timeout_s >= boot_timeout_s) {
    return UsageError("engine init_timeout must be shorter than boot_timeout");
  }
  return OkStatus();
}

Status QemuSettings::CheckProfile(Profile& p) const {
  std::error_code ec;
  if (p.config.empty() && !p.release.empty()) {
    const fs::path beside = fs::path(p.kernel).parent_path() / ("config-" + p.release);
    if (fs::is_regular_file(beside, ec)) p.config = beside.string();
  }
  return OkStatus();
}

Json QemuSettings::ToJson() const {
  return {{"qemu", binary},
          {"busybox", busybox},
          {"cpus", cpus},
          {"memory", memory},
          {"accel", accel},
          {"pin", pin},
          {"qemu_args", extra_args},
          {"boot_timeout_s", boot_timeout_s},
          {"init_timeout_s", init_timeout_s}};
}

void QemuSettings::FromJson(const Json& e) {
  KnownJsonKeys(e,
                {"name", "qemu", "busybox", "cpus", "memory", "accel", "pin", "qemu_args",
                 "boot_timeout_s", "init_timeout_s"},
                "plan engine");
  binary = e.at("qemu").get<std::string>();
  busybox = e.at("busybox").get<std::string>();
  cpus = e.at("cpus").get<uint64_t>();
  memory = e.at("memory").get<std::string>();
  accel = e.at("accel").get<std::string>();
  pin = e.at("pin").get<std::vector<uint64_t>>();
  extra_args = e.at("qemu_args").get<std::vector<std::string>>();
  boot_timeout_s = e.at("boot_timeout_s").get<double>();
  init_timeout_s = e.at("init_timeout_s").get<double>();
}

Status CheckKernelImageSize(const Profile& profile) {
  std::ifstream in(profile.kernel, std::ios::binary);
  unsigned char h[0x210] = {};
  if (!in.read(reinterpret_cast<char*>(h), sizeof h)) return OkStatus();
  auto le = [&h](size_t off, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | h[off + static_cast<size_t>(i)];
    return v;
  };
  if (le(0x1FE, 2) != 0xAA55 || std::memcmp(h + 0x202, "HdrS", 4) != 0) return OkStatus();
  const uint64_t setup_sects = h[0x1F1] == 0 ? 4 : h[0x1F1];
  const uint64_t syssize = le(0x1F4, le(0x206, 2) >= 0x0204 ? 4 : 2);
  const uint64_t declared = (setup_sects + 1) * 512 + syssize * 16;
  std::error_code ec;
  const uint64_t size = fs::file_size(profile.kernel, ec);
  // arch/x86/boot/tools/build.c pads the image to syssize paragraphs; a newer build may end
  // within the last paragraph, so 16 bytes short is still whole.
  if (ec || size + 16 >= declared) return OkStatus();
  return UsageError(fmt::format(
      "profile '{}': kernel '{}' is cut short: its setup header declares {} bytes "
      "((setup_sects {} + 1) * 512 + syssize {} * 16), the file has {}; copy the image again "
      "(e.g. from /boot)",
      profile.name, EscapeControl(profile.kernel), declared, setup_sects, syssize, size));
}

Status CheckGuestMemory(const std::string& memory, const std::string& meminfo) {
  uint64_t total_kb = 0;
  for (const std::string& line : Split(meminfo, '\n')) {
    if (line.rfind("MemTotal:", 0) == 0) total_kb = std::strtoull(line.c_str() + 9, nullptr, 10);
  }
  size_t digits = 0;
  while (digits < memory.size() && memory[digits] >= '0' && memory[digits] <= '9') ++digits;
  if (total_kb == 0 || digits == 0 || digits > 9) return OkStatus();
  const uint64_t n = std::strtoull(memory.substr(0, digits).c_str(), nullptr, 10);
  const std::string suffix = memory.substr(digits);
  const uint64_t mib = suffix == "G" ? n * 1024 : n;  // QEMU's -m: MiB without a suffix
  const uint64_t total_mib = total_kb / 1024;
  if (mib <= total_mib) return OkStatus();
  return UsageError(fmt::format(
      "engine memory {} is more than this host has (MemTotal {} MiB in /proc/meminfo); give at "
      "most {}M, e.g. 2G",
      EscapeControl(memory), total_mib, total_mib));
}

Status CheckPinnedCpus(const std::vector<uint64_t>& pin, const std::vector<uint64_t>& allowed) {
  if (allowed.empty()) return OkStatus();
  for (uint64_t cpu : pin) {
    if (std::find(allowed.begin(), allowed.end(), cpu) != allowed.end()) continue;
    // The CPUs there are, as the kernel writes a CPU list ("0-3,6").
    std::string list;
    for (size_t i = 0; i < allowed.size();) {
      size_t j = i;
      while (j + 1 < allowed.size() && allowed[j + 1] == allowed[j] + 1) ++j;
      if (!list.empty()) list += ',';
      list += j == i ? fmt::format("{}", allowed[i]) : fmt::format("{}-{}", allowed[i], allowed[j]);
      i = j + 1;
    }
    return UsageError(fmt::format(
        "engine pin names CPU {}, which this host does not have or kstacklab may not run on "
        "(CPUs here: {}); give CPUs from {}",
        cpu, list, list));
  }
  return OkStatus();
}

std::string GuestInitScript(const Architecture& arch) {
  // Values reach the guest as files (/job/*), read with `read -r` and passed as quoted
  // arguments to the job script the remote engines share (remote.h, /k/job.sh here): nothing a
  // profile says is evaluated by the shell.
  // The console and the channel are the machine's devices (arch.h).
  return fmt::format(R"INIT(#!/bin/busybox sh
/bin/busybox mount -t devtmpfs dev /dev
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp XDG_DATA_HOME=/tmp/data XDG_STATE_HOME=/tmp/state
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tmpfs tmp /tmp
echo "kstacklab-guest: init started" > /dev/{console}
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
set --
while IFS= read -r name && IFS= read -r value; do set -- "$@" "$name" "$value"; done < /job/sysctl
set -- "$@" --
while IFS= read -r arg; do set -- "$@" "$arg"; done < /job/run-args
strength=
[ -f /job/strength ] && strength=$(cat /job/strength)
echo "kstacklab-guest: run $(cat /job/label)" > /dev/{console}
sh /k/job.sh /k/kstacklab /tmp/out "$(cat /job/label)" "$strength" "$@" > /dev/{channel}
sync
echo "kstacklab-guest: done" > /dev/{console}
poweroff -f
)INIT",
                     fmt::arg("console", arch.qemu_console_tty),
                     fmt::arg("channel", arch.qemu_channel_tty));
}

bool IsStaticElf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char ehdr[64] = {};
  if (!in.read(ehdr, sizeof ehdr)) return false;
  if (std::memcmp(ehdr,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      ehdr[4] != 2)
    return false;  // ELF64 only
  uint64_t phoff = 0;
  uint16_t phentsize = 0;
  uint16_t phnum = 0;
  std::memcpy(&phoff, ehdr + 0x20, 8);
  std::memcpy(&phentsize, ehdr + 0x36, 2);
  std::memcpy(&phnum, ehdr + 0x38, 2);
  if (phentsize < 4 || phnum == 0 || phnum > 256) return false;
  for (uint16_t i = 0; i < phnum; ++i) {
    in.seekg(static_cast<std::streamoff>(phoff + uint64_t{i} * phentsize));
    uint32_t type = 0;
    if (!in.read(reinterpret_cast<char*>(&type), 4)) return false;
    if (type == 3) return false;  // PT_INTERP: a dynamic executable
  }
  return access(path.c_str(), X_OK) == 0;
}

}  // namespace kstacklab::campaign
